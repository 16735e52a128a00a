package processor_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/route"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/wal"
)

// TestTraceContextEndToEnd follows callbacks from the gateway's POST to the
// processor's output and DLQ records (docs/DESIGN.md §2, docs/tracing.md):
// a request's traceparent, or a new trace when it has none, reaches the
// output record of the room it changed, and the DLQ record of a callback
// the processor rejects, as a hop of the same trace with a span of its
// own. Without a tracer the callback record carries the request's value as
// sent; with one (and kotel's hooks on both clients) every hop is a span,
// and the span a record names leads back, parent by parent, to the
// gateway's request span and the caller's span.
func TestTraceContextEndToEnd(t *testing.T) {
	t.Run("no tracer", func(t *testing.T) { testTraceContext(t, nil) })
	t.Run("tracer", func(t *testing.T) { testTraceContext(t, tracetest.NewInMemoryExporter()) })
}

func testTraceContext(t *testing.T, exp *tracetest.InMemoryExporter) {
	const (
		tp0 = "00-11111111111111111111111111111111-2222222222222222-01" // room test-r-1, older
		tp1 = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" // room test-r-1, newest
		tp3 = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" // room test-r-3, rejected
	)
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t, testenv.WithTopics(1, topics.All()...))
	rs := testenv.StartRedis(t)

	var (
		provider trace.TracerProvider
		hooks    []kgo.Opt
	)
	if exp != nil {
		sdk := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		t.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
		provider = sdk
		kt := kotel.NewKotel(kotel.WithTracer(kotel.NewTracer(kotel.TracerProvider(sdk), kotel.TracerPropagator(propagation.TraceContext{}))))
		hooks = []kgo.Opt{kgo.WithHooks(kt.Hooks()...)}
	}

	routes, err := route.New(nil, env)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{
		Client: k.Client(append(gateway.ProducerOpts(5*time.Second, gateway.DefaultMaxBodyBytes), hooks...)...),
		Routes: routes, Insecure: true, Logger: zaptest.NewLogger(t), TracerProvider: provider,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	ts := time.Now().UnixMilli()
	post := func(room, user, tp string, ts int64) {
		t.Helper()
		body := fmt.Sprintf(`{"room_id":%q,"user_id":%q,"type":"audio","value":1,"ts":%d}`, room, user, ts)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+gateway.CallbackPath+"rtc", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if tp != "" {
			req.Header.Set("traceparent", tp)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST for %s: %d", room, resp.StatusCode)
		}
	}
	// Two callbacks for test-r-1, each changing its list: its (last) output
	// continues the newest's trace; in one batch, its span links the older.
	post("test-r-1", "u-0", tp0, ts)
	post("test-r-1", "u-1", tp1, ts)
	post("test-r-2", "u-1", "", ts)
	post("test-r-3", "u-1", tp3, 1600000000000) // before the score epoch: the processor's DLQ

	// The callback records; the newest of each room.
	in := map[string]trace.SpanContext{}
	for _, r := range k.ReadAll(topics.RTC) {
		h := testenv.RecordHeaders(r)
		if len(h["traceparent"]) != 1 {
			t.Fatalf("callback record of %s: headers %v, want one traceparent", r.Key, h)
		}
		sc, ok := traceparent.Parse([]byte(h["traceparent"][0]))
		if !ok {
			t.Fatalf("callback record of %s: traceparent %q does not parse", r.Key, h["traceparent"][0])
		}
		in[string(r.Key)] = sc
	}
	want1, _ := traceparent.Parse([]byte(tp1))
	want3, _ := traceparent.Parse([]byte(tp3))
	if in["test-r-1"].TraceID() != want1.TraceID() || in["test-r-3"].TraceID() != want3.TraceID() {
		t.Fatalf("callback records' traces %v, want the requests'", in)
	}
	if exp == nil && (!in["test-r-1"].Equal(want1) || !in["test-r-3"].Equal(want3)) {
		t.Fatalf("without a tracer, callback records' traceparents %v, want the requests' as sent", in)
	}
	if !in["test-r-2"].IsValid() || in["test-r-2"].TraceID() == want1.TraceID() {
		t.Fatalf("callback record of a request without traceparent: %v, want a new trace", in["test-r-2"])
	}

	// The processor.
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	store, _ := sink.New(rc, sink.Config{Env: env, CacheMembers: sink.DefaultCacheMembers})
	log, err := wal.Open(t.TempDir(), wal.Config{Sync: wal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := processor.New(ctx, processor.Config{Brokers: k.Seeds, Env: env, Rooms: testRooms(t, env),
		KafkaOpts: testenv.FastGroupOpts(), ConsumerOpts: hooks, TracerProvider: provider}, store, log)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	for p.Stats().Records.Load() < 4 {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	out := map[string]trace.SpanContext{} // the last of each room
	for _, r := range append(k.ReadAll(topics.TopN), k.ReadAll(topics.DLQ)...) {
		h := testenv.RecordHeaders(r)
		if len(h["traceparent"]) != 1 {
			t.Fatalf("%s record of %s: headers %v, want one traceparent", r.Topic, r.Key, h)
		}
		sc, ok := traceparent.Parse([]byte(h["traceparent"][0]))
		if !ok {
			t.Fatalf("%s record of %s: traceparent %q does not parse", r.Topic, r.Key, h["traceparent"][0])
		}
		out[string(r.Key)] = sc
	}
	if len(out) != 3 {
		t.Fatalf("output and DLQ records of %d rooms, want 3: %v", len(out), out)
	}
	for room, sc := range out {
		if sc.TraceID() != in[room].TraceID() || sc.SpanID() == in[room].SpanID() {
			t.Errorf("room %s: output or DLQ traceparent %v, want the trace of %v with a span of its own", room, sc, in[room])
		}
	}
	if exp == nil {
		return
	}

	// The spans: the one each output and DLQ record names leads back to the
	// gateway's request span, whose parent is the caller's span.
	spans := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		spans[s.SpanContext.SpanID()] = s
	}
	var batch trace.SpanContext
	for _, s := range spans {
		if s.Name == "rostrum batch" {
			batch = s.SpanContext
		}
	}
	for room, sc := range out {
		var names []string
		var roomLinked bool
		id, caller := sc.SpanID(), trace.SpanID{}
		for s, ok := spans[id]; ok; s, ok = spans[id] {
			names = append(names, s.Name)
			if s.Name == "rostrum room" {
				// The batch, and test-r-1's older callback when it was in
				// the same batch.
				want0, _ := traceparent.Parse([]byte(tp0))
				for i, l := range s.Links {
					switch {
					case i == 0:
						roomLinked = l.SpanContext.Equal(batch)
					case l.SpanContext.TraceID() != want0.TraceID():
						roomLinked = false
					}
				}
				t.Logf("room %s: %d links", room, len(s.Links))
			}
			id, caller = s.Parent.SpanID(), s.Parent.SpanID()
		}
		path := strings.Join(names, " < ")
		if !strings.Contains(path, "POST /v1/callbacks/{source}") {
			t.Errorf("room %s: spans %s do not reach the gateway's request", room, path)
		}
		switch room {
		case "test-r-1":
			if caller != want1.SpanID() || !roomLinked {
				t.Errorf("room %s: spans %s, caller %v, linked to the batch %v", room, path, caller, roomLinked)
			}
		case "test-r-3":
			if caller != want3.SpanID() || !strings.Contains(path, "rostrum reject") {
				t.Errorf("room %s: spans %s, caller %v", room, path, caller)
			}
		}
		t.Logf("room %s: %s", room, path)
	}
}
