package gateway

import (
	"context"
	"net/http"
	"net/textproto"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/traceparent"
)

// Trace context (docs/DESIGN.md §11, docs/tracing.md): every callback
// record carries a traceparent header. Without a tracer (Config.TracerProvider
// nil) it is the request's own traceparent, copied as sent, or a new trace
// (traceparent.New) when the request has none or an invalid one. With a
// tracer the request is a server span, child of the request's traceparent
// or the root of a new trace, and the records name that span; when the
// client carries kotel's hooks, kotel's produce hook replaces it with its
// publish span, a child of the request's.

// tracerName names the gateway's tracer (its instrumentation scope).
const tracerName = "github.com/rostrumhq/rostrum/gateway"

// requestTrace is the trace context of one callback request.
type requestTrace struct {
	ctx  context.Context // the span's, for the records' Context; nil without a tracer
	span trace.Span      // nil without a tracer
	tp   []byte          // the records' traceparent value
}

// traceparentKey is the traceparent header's key in an http.Header.
var traceparentKey = textproto.CanonicalMIMEHeaderKey(traceparent.Header)

// startTrace returns the trace context of callback request r from source.
// Without a tracer the value is written in q, and so lives as long as q.
// End it when the request is answered.
func (g *Gateway) startTrace(r *http.Request, source string, q *request) requestTrace {
	q.tp = append(q.tp[:0], header(r, traceparentKey)...)
	parent, ok := traceparent.Parse(q.tp)
	if g.cfg.TracerProvider == nil {
		if !ok {
			q.tp = traceparent.Append(q.tp[:0], traceparent.New())
		}
		return requestTrace{tp: q.tp}
	}
	ctx := context.Background()
	if ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	ctx, span := g.cfg.TracerProvider.Tracer(tracerName).Start(ctx, "POST "+CallbackPath+"{source}",
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("url.path", r.URL.Path),
			attribute.String("rostrum.source", source),
			attribute.String("rostrum.request_id", q.id)))
	sc := span.SpanContext()
	switch {
	case !sc.IsValid() && ok: // a no-op provider: continue the request's trace
		sc = traceparent.Child(parent)
	case !sc.IsValid():
		sc = traceparent.New()
	}
	return requestTrace{ctx: ctx, span: span, tp: traceparent.Format(sc)}
}

// header returns the records' traceparent header.
func (t requestTrace) header() kgo.RecordHeader {
	return kgo.RecordHeader{Key: codec.HeaderTraceparent, Value: t.tp}
}

// records gives each record the span's context, and with it headers of its
// own: kotel's produce hook writes the traceparent of each record's publish
// span into them, which a slice shared by the request's records would race
// on. Without a tracer the records share one header slice.
func (t requestTrace) records(recs []kgo.Record) {
	if t.span == nil {
		return
	}
	for i := range recs {
		recs[i].Context = t.ctx
		recs[i].Headers = slices.Clip(slices.Clone(recs[i].Headers))
	}
}

// end ends the request's span, if any.
func (t requestTrace) end() {
	if t.span != nil {
		t.span.End()
	}
}
