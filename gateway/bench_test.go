package gateway

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/auth"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/route"
)

// The benchmarks drive the callback endpoint through ServeHTTP in process,
// without a listener or an HTTP client: what they count is the gateway's
// own cost per request (credentials, body, JSON, routing, records, metrics,
// answer). The "noop" producer acknowledges every record at once, so kgo
// and a broker cost nothing; the "kfake" cases produce for real to an
// in-process kfake broker, whose work and kgo's are counted in with the
// gateway's. Like most senders, the requests carry no X-Request-Id and no
// traceparent, but in the "headers" case (both, which the gateway takes
// over).
//
// cpu-ns/op is the process's CPU time per request (user and system, the
// garbage collector's included), which, unlike ns/op, other processes on a
// busy machine do not inflate.
//
//	go test ./gateway -run '^$' -bench Callback -benchmem

// benchBody is a single-object rtc callback as docs/DESIGN.md §11 shows one.
const benchBody = `{"room_id":"r-1001","user_id":"u-42","type":"volume","value":512,"ts":1763700000123}`

// benchArray is an array of eight objects of three rooms.
const benchArray = `[{"room_id":"r-1","user_id":"u-1","type":"volume","value":512,"ts":1763700000123},` +
	`{"room_id":"r-2","user_id":"u-2","type":"volume","value":300,"ts":1763700000124},` +
	`{"room_id":"r-1","user_id":"u-3","type":"join","ts":1763700000125},` +
	`{"room_id":"r-3","user_id":"u-4","type":"volume","value":12,"ts":1763700000126},` +
	`{"room_id":"r-1","user_id":"u-1","type":"video","value":true,"ts":1763700000127},` +
	`{"room_id":"r-2","user_id":"u-5","type":"leave","ts":1763700000128},` +
	`{"room_id":"r-3","user_id":"u-4","type":"volume","value":40,"ts":1763700000129},` +
	`{"room_id":"r-1","user_id":"u-1","type":"volume","value":511,"ts":1763700000130}]`

const (
	benchToken  = "tok-bench-0123456789"
	benchSecret = "sig-bench-0123456789"
)

// noopProducer acknowledges every record at once.
type noopProducer struct{}

func (noopProducer) Produce(_ context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	promise(r, nil)
}

// benchWriter is a ResponseWriter that keeps the status and drops the
// body, its header map reused from one request to the next.
type benchWriter struct {
	h    http.Header
	code int
}

func (w *benchWriter) Header() http.Header { return w.h }
func (w *benchWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *benchWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(b), nil
}

// SetReadDeadline takes the body's deadline, as net/http's writer does
// (through http.ResponseController).
func (w *benchWriter) SetReadDeadline(time.Time) error { return nil }

// benchReader is a request body that can be rewound without allocating.
type benchReader struct{ bytes.Reader }

func (*benchReader) Close() error { return nil }

func BenchmarkCallback(b *testing.B) {
	cases := []struct {
		name   string
		body   string
		cred   string // "", "bearer" or "signed" (timestamped)
		kafka  bool
		header []string
	}{
		{name: "open/noop", body: benchBody},
		{name: "bearer/noop", body: benchBody, cred: "bearer"},
		{name: "signed/noop", body: benchBody, cred: "signed"},
		{name: "array/noop", body: benchArray},
		{name: "headers/noop", body: benchBody, header: []string{"X-Request-Id", "req-4f1c2a", "Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}},
		{name: "open/kfake", body: benchBody, kafka: true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			routes, err := route.New(nil, "bench")
			if err != nil {
				b.Fatal(err)
			}
			// The zero client only passes Validate: noopProducer replaces it.
			cfg := Config{Routes: routes, Insecure: c.cred == "", Logger: zap.NewNop(), Client: &kgo.Client{}}
			if c.kafka {
				k := testenv.StartKafka(b, testenv.WithTopics(3, Topic("", "bench", "rtc")))
				cfg.Client = k.Client(ProducerOpts(5*time.Second, DefaultMaxBodyBytes)...)
			}
			r := httptest.NewRequest(http.MethodPost, CallbackPath+"rtc", nil)
			r.Header.Set("Content-Type", "application/json")
			for i := 0; i+1 < len(c.header); i += 2 {
				r.Header.Set(c.header[i], c.header[i+1])
			}
			switch c.cred {
			case "bearer":
				if cfg.Tokens, err = auth.LoadTokens(benchFile(b, benchToken)); err != nil {
					b.Fatal(err)
				}
				r.Header.Set("Authorization", "Bearer "+benchToken)
			case "signed":
				if cfg.Secrets, err = auth.LoadSecrets(benchFile(b, benchSecret)); err != nil {
					b.Fatal(err)
				}
				ts := time.Now().Unix() // within MaxSkew for the benchmark's few seconds
				r.Header.Set(DefaultTimestampHeader, strconv.FormatInt(ts, 10))
				r.Header.Set(DefaultSignatureHeader, auth.SignRequest([]byte(benchSecret), ts, http.MethodPost, r.URL.Path, []byte(c.body)))
			}
			g, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			if !c.kafka {
				g.prod = noopProducer{}
			}
			body := &benchReader{}
			r.Body = body
			r.ContentLength = int64(len(c.body))
			w := &benchWriter{h: http.Header{}}
			raw := []byte(c.body)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			for range b.N {
				body.Reset(raw)
				clear(w.h)
				w.code = 0
				g.ServeHTTP(w, r)
				if w.code != http.StatusAccepted {
					b.Fatalf("answer %d, want 202", w.code)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

func benchFile(b *testing.B, text string) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "credential")
	if err := os.WriteFile(p, []byte(text+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	return p
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
