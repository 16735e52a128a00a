package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kotel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap/zaptest"

	"github.com/rostrumhq/rostrum/gateway"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/internal/traceparent"
	"github.com/rostrumhq/rostrum/route"
)

// TestGatewayTraceparent: every record of a request carries a traceparent
// of the request's trace. Without a tracer the records share the request's
// value as sent (or one new trace); with a tracer and kotel's hooks each
// record names its own publish span, a child of the request's server span,
// which is a child of the caller's span.
func TestGatewayTraceparent(t *testing.T) {
	const in = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	caller, _ := traceparent.Parse([]byte(in))
	body := `[{"room_id":"r-1","type":"join"},{"room_id":"r-2","type":"join"},{"room_id":"r-3","type":"join"}]`
	for _, tc := range []struct {
		name   string
		tracer bool
		in     string
	}{
		{"no tracer", false, in},
		{"no tracer, no traceparent", false, ""},
		{"no tracer, invalid traceparent", false, "00-zz"},
		{"tracer", true, in},
		{"tracer, no traceparent", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := testenv.StartKafka(t, testenv.WithTopics(1, allTopics("test")...))
			opts := gateway.ProducerOpts(5*time.Second, gateway.DefaultMaxBodyBytes)
			exp := tracetest.NewInMemoryExporter()
			cfg := gateway.Config{Insecure: true, Logger: zaptest.NewLogger(t)}
			if tc.tracer {
				sdk := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
				defer func() { _ = sdk.Shutdown(context.Background()) }()
				kt := kotel.NewKotel(kotel.WithTracer(kotel.NewTracer(kotel.TracerProvider(sdk), kotel.TracerPropagator(propagation.TraceContext{}))))
				opts = append(opts, kgo.WithHooks(kt.Hooks()...))
				cfg.TracerProvider = sdk
			}
			cfg.Client = k.Client(opts...)
			var err error
			if cfg.Routes, err = route.New(nil, "test"); err != nil {
				t.Fatal(err)
			}
			gw, err := gateway.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(gw)
			defer srv.Close()
			r := &rig{kafka: k, srv: srv, gw: gw}
			var hdr []string
			if tc.in != "" {
				hdr = []string{"traceparent", tc.in}
			}
			if a := r.post(t, "rtc", "application/json", body, hdr...); a.code != http.StatusAccepted {
				t.Fatalf("answer %d %s", a.code, a.raw)
			}
			recs := k.ReadAll(gateway.Topic("", "test", "rtc"))
			if len(recs) != 3 {
				t.Fatalf("%d records, want 3", len(recs))
			}
			var scs []trace.SpanContext
			for _, rec := range recs {
				sc, ok := traceparent.Parse([]byte(header(rec, "traceparent")))
				if !ok {
					t.Fatalf("record %s: traceparent %q", rec.Key, header(rec, "traceparent"))
				}
				if sc.TraceID() != scs0(scs, sc).TraceID() {
					t.Fatalf("records of one request in traces %v and %v", scs[0], sc)
				}
				scs = append(scs, sc)
			}
			switch {
			case !tc.tracer && tc.in == in:
				for _, rec := range recs {
					if header(rec, "traceparent") != in {
						t.Errorf("record %s: traceparent %q, want the request's as sent", rec.Key, header(rec, "traceparent"))
					}
				}
			case !tc.tracer:
				if scs[0].TraceID() == caller.TraceID() || !scs[0].Equal(scs[1]) || !scs[0].IsSampled() {
					t.Errorf("records' traceparents %v, want one new sampled trace", scs)
				}
			default:
				if tc.in != "" && scs[0].TraceID() != caller.TraceID() {
					t.Errorf("records' trace %v, want the caller's", scs[0].TraceID())
				}
				spans := map[trace.SpanID]tracetest.SpanStub{}
				for _, s := range exp.GetSpans() {
					spans[s.SpanContext.SpanID()] = s
				}
				seen := map[trace.SpanID]bool{}
				for _, sc := range scs {
					pub, ok := spans[sc.SpanID()]
					if !ok || seen[sc.SpanID()] {
						t.Fatalf("record traceparent %v: not a publish span of its own", sc)
					}
					seen[sc.SpanID()] = true
					req, ok := spans[pub.Parent.SpanID()]
					if !ok || req.Name != "POST /v1/callbacks/{source}" || req.SpanKind != trace.SpanKindServer {
						t.Fatalf("publish span %q's parent %v is not the request's span", pub.Name, pub.Parent)
					}
					if tc.in != "" && req.Parent.SpanID() != caller.SpanID() {
						t.Errorf("request span's parent %v, want the caller's %v", req.Parent, caller)
					}
					if tc.in == "" && req.Parent.IsValid() {
						t.Errorf("request span's parent %v, want none", req.Parent)
					}
				}
			}
		})
	}
}

// scs0 is the first of scs, or sc when there is none.
func scs0(scs []trace.SpanContext, sc trace.SpanContext) trace.SpanContext {
	if len(scs) == 0 {
		return sc
	}
	return scs[0]
}
