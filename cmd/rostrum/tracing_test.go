package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"
)

// env is a getenv over a map.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestTracingOffByDefault: without an OTLP endpoint, or with the SDK or
// the exporter turned off, nothing is installed (no provider, no hooks).
func TestTracingOffByDefault(t *testing.T) {
	for _, vars := range []map[string]string{
		{},
		{"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces", "OTEL_TRACES_EXPORTER": "none"},
	} {
		tr, err := startTracing(context.Background(), env(vars), "rostrum", zaptest.NewLogger(t))
		if err != nil {
			t.Fatalf("%v: %v", vars, err)
		}
		if tr.provider() != nil || tr.kafkaOpts() != nil {
			t.Errorf("%v: tracing on, want off", vars)
		}
		tr.stop(zaptest.NewLogger(t))
	}
}

// TestTracingRefusesWhatItCannotHonour: another exporter or protocol is an
// error naming the variable, not silence.
func TestTracingRefusesWhatItCannotHonour(t *testing.T) {
	for _, tc := range []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL"},
	} {
		_, err := startTracing(context.Background(), env(tc.vars), "rostrum", zaptest.NewLogger(t))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %s", tc.vars, err, tc.want)
		}
	}
}

// TestTracingExportsOverOTLPHTTP: with an endpoint, a span reaches an OTLP
// HTTP receiver at /v1/traces, at the latest when tracing stops, with the
// default service name.
func TestTracingExportsOverOTLPHTTP(t *testing.T) {
	var (
		mu   sync.Mutex
		path string
		body []byte
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		path, body = r.URL.Path, append(body, b...)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	// The exporter reads the rest of OTEL_EXPORTER_OTLP_* from the process.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "none")
	tr, err := startTracing(context.Background(), env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}), "rostrum-gateway", zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if tr.provider() == nil || len(tr.kafkaOpts()) != 1 {
		t.Fatal("tracing off, want on")
	}
	_, span := tr.provider().Tracer("test").Start(context.Background(), "a span")
	span.End()
	tr.stop(zaptest.NewLogger(t))
	mu.Lock()
	defer mu.Unlock()
	if path != "/v1/traces" || !bytes.Contains(body, []byte("a span")) || !bytes.Contains(body, []byte("rostrum-gateway")) {
		t.Fatalf("receiver got %s with %q, want the span and the service name at /v1/traces", path, body)
	}
}
