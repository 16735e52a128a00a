package processor

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/traceparent"
)

// Trace context (docs/DESIGN.md §2, docs/tracing.md). A callback record's
// traceparent header continues, as a hop of the same trace, into the
// output record of each room whose list the callback's batch changed and
// into the DLQ record made from it:
//
//   - A batch folds many callbacks into one update per room, so a room's
//     output continues one trace: that of the room's newest callback in the
//     batch that carries a traceparent (the folder keeps its index per room,
//     fold.go). The others' traces end in the batch; with a tracer, the
//     room's span links up to maxLinks of them (the batch's span links
//     none: a batch holds thousands).
//   - Without a tracer (Config.TracerProvider nil) nothing is recorded: the
//     output's traceparent is the callback's trace id and flags with a new
//     random span id (traceparent.Child), its parent the callback's span.
//     The only cost per event is one store in the folder; the header is
//     looked for once per record and parsed once per output room.
//   - With a tracer, the batch has a span ("rostrum batch"), each output
//     room one ("rostrum room": child of the callback's context, linked to
//     the batch's span, ended when the output is acknowledged), and each
//     DLQ record one ("rostrum reject", child of the rejected record's
//     context); the record's traceparent names that span. When the client
//     carries kotel's hooks, the callback's context is the span kotel's
//     fetch hook started for it, and kotel's produce hook replaces the
//     traceparent with its publish span, a child of ours.
//   - Records replayed from the WAL carry no headers (the WAL keeps none,
//     docs/DESIGN.md §6): what a replay or a timer's batch publishes starts
//     no trace and carries no traceparent.

// tracerName names the processor's tracer (its instrumentation scope).
const tracerName = "github.com/rostrumhq/rostrum/processor"

// maxLinks bounds the links of a room's span to the other traced callbacks
// of the room in the batch: the first maxLinks of them.
const maxLinks = 32

// tracer returns the processor's tracer, or nil when none records.
func (p *Processor) tracer() trace.Tracer {
	if p.cfg.TracerProvider == nil {
		return nil
	}
	return p.cfg.TracerProvider.Tracer(tracerName)
}

// tracedIndex returns 1+i when r, the batch's i-th record, carries a
// traceparent header (valid or not: it is parsed only when an output
// continues it), else 0. The folder keeps it per room.
func tracedIndex(r *kgo.Record, i int) int32 {
	for _, h := range r.Headers {
		if h.Key == codec.HeaderTraceparent {
			return int32(i) + 1
		}
	}
	return 0
}

// parentOf returns the trace context that a hop continuing r continues:
// the span kotel's fetch hook started for r when the client carries it,
// else r's traceparent header; false when r has neither (or the header is
// not a valid traceparent).
func parentOf(r *kgo.Record) (context.Context, trace.SpanContext, bool) {
	if r.Context != nil {
		if sc := trace.SpanContextFromContext(r.Context); sc.IsValid() {
			return r.Context, sc, true
		}
	}
	for _, h := range r.Headers {
		if h.Key != codec.HeaderTraceparent {
			continue
		}
		sc, ok := traceparent.Parse(h.Value)
		if !ok {
			return nil, trace.SpanContext{}, false
		}
		return trace.ContextWithRemoteSpanContext(context.Background(), sc), sc, true
	}
	return nil, trace.SpanContext{}, false
}

// hop starts a hop that continues parent: with tracer a span named name
// (nil tracer: none), and returns its context, the span (nil without a
// tracer) and the span context its records' traceparent names. A span
// that a no-op or dropping tracer gives the parent's own id is replaced by
// a child of its own, so that the hop always has a new span id.
func hop(tracer trace.Tracer, ctx context.Context, parent trace.SpanContext, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span, trace.SpanContext) {
	if tracer == nil {
		return ctx, nil, traceparent.Child(parent)
	}
	ctx, span := tracer.Start(ctx, name, opts...)
	sc := span.SpanContext()
	if !sc.IsValid() || sc.SpanID() == parent.SpanID() {
		sc = traceparent.Child(parent)
	}
	return ctx, span, sc
}

// withTraceparent returns hs and a traceparent header naming sc, in a
// slice of its own (hs may be shared, as the output records' headers are).
func withTraceparent(hs []kgo.RecordHeader, sc trace.SpanContext) []kgo.RecordHeader {
	out := make([]kgo.RecordHeader, len(hs), len(hs)+1)
	copy(out, hs)
	return append(out, kgo.RecordHeader{Key: codec.HeaderTraceparent, Value: traceparent.Format(sc)})
}

// startTrace starts the batch's span when a tracer records.
func (b *batch) startTrace() {
	tr := b.p.tracer()
	if tr == nil || b.span != nil {
		return
	}
	_, b.span = tr.Start(context.Background(), "rostrum batch", trace.WithAttributes(attribute.Int("rostrum.records", len(b.recs))))
	b.links = map[string][]int32{}
}

// noteLinks notes record i, when it carries a traceparent, as a traced
// callback of each room its events touch, for the links of the room's
// span. Without a tracer (b.links nil) it does nothing.
func (b *batch) noteLinks(r *kgo.Record, i int, evs []codec.Event) {
	if b.links == nil || tracedIndex(r, i) == 0 {
		return
	}
	for j := range evs {
		room := evs[j].RoomID
		if !evs[j].Type.Meeting() {
			continue
		}
		if l := b.links[room]; len(l) < maxLinks && (len(l) == 0 || l[len(l)-1] != int32(i)) {
			b.links[room] = append(l, int32(i))
		}
	}
}

// roomLinks returns the links of room's span: the batch's span and the
// room's other traced callbacks than parent's record.
func (b *batch) roomLinks(room string, parent *kgo.Record) []trace.Link {
	var links []trace.Link
	if b.span != nil {
		links = append(links, trace.Link{SpanContext: b.span.SpanContext()})
	}
	for _, i := range b.links[room] {
		if r := b.recs[i]; r != parent {
			if _, sc, ok := parentOf(r); ok {
				links = append(links, trace.Link{SpanContext: sc})
			}
		}
	}
	return links
}

// tracedRecord returns the record whose trace room's output continues: the
// room's newest record in the batch with a traceparent header; nil when
// none has one or the batch decoded no records (a timer's batch).
func (b *batch) tracedRecord(room string) *kgo.Record {
	if !b.decoded || len(b.recs) == 0 {
		return nil
	}
	ri, ok := b.fold.roomIdx[room]
	if !ok {
		return nil
	}
	i := b.fold.rooms[ri].rec
	if i <= 0 || int(i) > len(b.recs) {
		return nil
	}
	return b.recs[i-1]
}

// output returns the output record of room with value, continuing the
// trace of the room's traced callback in the batch when there is one.
func (b *batch) output(room string, value []byte) *kgo.Record {
	rec := b.p.outputRecord(room, value)
	r := b.tracedRecord(room)
	if r == nil {
		return rec
	}
	ctx, parent, ok := parentOf(r)
	if !ok {
		return rec
	}
	var opts []trace.SpanStartOption
	tr := b.p.tracer()
	if tr != nil {
		opts = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(attribute.String("rostrum.room", room)), trace.WithLinks(b.roomLinks(room, r)...)}
	}
	ctx, span, sc := hop(tr, ctx, parent, "rostrum room", opts...)
	if span != nil {
		rec.Context = ctx
		b.roomSpans = append(b.roomSpans, span)
	}
	rec.Headers = withTraceparent(rec.Headers, sc)
	return rec
}

// endRoomSpans ends the spans of the rooms the batch published (or, before
// a retry of its resolve, meant to).
func (b *batch) endRoomSpans() {
	for _, s := range b.roomSpans {
		s.End()
	}
	b.roomSpans = b.roomSpans[:0]
}

// endTrace ends the batch's spans once it is done.
func (b *batch) endTrace() {
	b.endRoomSpans()
	if b.span != nil {
		b.span.SetAttributes(attribute.Int("rostrum.outputs", b.stored), attribute.Int("rostrum.dlq", len(b.dlq)+len(b.lateDLQ)))
		b.span.End()
		b.span = nil
	}
}

// traceDLQ gives d, the DLQ copy of r, a traceparent continuing r's trace,
// when r has one; with a tracer, the hop is a span that ends at once with
// the reason as its error.
func (p *Processor) traceDLQ(d, r *kgo.Record, reason string) {
	ctx, parent, ok := parentOf(r)
	if !ok {
		return
	}
	tr := p.tracer()
	var opts []trace.SpanStartOption
	if tr != nil {
		opts = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
			attribute.String("messaging.source.name", r.Topic), attribute.Int("messaging.kafka.source.partition", int(r.Partition)),
			attribute.Int64("messaging.kafka.message.offset", r.Offset))}
	}
	ctx, span, sc := hop(tr, ctx, parent, "rostrum reject", opts...)
	if span != nil {
		span.SetStatus(codes.Error, reason)
		span.End()
		d.Context = ctx
	}
	d.Headers = withTraceparent(d.Headers, sc)
}
