package processor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/wal"
)

// batch is one poll batch on its way through the durability order. It
// remembers which steps are done so that a retry repeats only the rest.
type batch struct {
	p    *Processor
	recs []*kgo.Record
	fold *folder // where decode folds; nil in the timer's and recovery's batches, which decode nothing

	decoded    bool
	dlq        []*kgo.Record
	rooms      []ranking.RoomUpdate
	roomTS     map[string]int64     // newest event time per room, for the output's ts
	roomOldest map[string]time.Time // Kafka timestamp of each room's oldest record (publish latency); nil in the timer's batches
	events     int
	applied    map[string]int     // events per input topic
	dlqReasons []string           // reason class of each DLQ record, in order
	ignored    map[ignoredKey]int // events skipped for their unknown type
	walSeq     uint64
	prepTook   time.Duration // time in prepare (stage 1), for Observer.Batch
	dlqSent    bool
	outputs    []*kgo.Record
	acks       []ranking.Ack
	resolved   bool
	rewound    bool // recovery rewound the partitions: do not commit
	// afterRewind: polled while the batch before it rewound the partitions
	// (pipeline.go); not committed either, but it does not pass the mark on
	afterRewind bool
	stored      int              // stable lists stored by resolve
	due         map[string]int64 // when not nil, merge records each room's hysteresis deadline (0: none)
	storeTrips  int              // Redis round trips of merge (stores and re-reads)

	boards   boardStage    // the stage its board events go to (boards.go)
	lateDLQ  []*kgo.Record // records the board scripts found late, published in step 6
	lateSent bool

	// spans (trace.go); nil and empty when no tracer records
	span      trace.Span         // the batch's
	roomSpans []trace.Span       // those of the rooms whose outputs it publishes
	links     map[string][]int32 // room → indexes of its traced records, for the room span's links
}

// newBatch starts a batch of recs without a folder: the timer's and
// recovery's batches, which decode nothing. A batch that decodes needs one:
// poll batches take theirs from Processor.nextBatch, so that two can be in
// hand, and a WAL replay has its own (replayLog).
func newBatch(p *Processor, recs []*kgo.Record) *batch {
	return &batch{p: p, recs: recs, boards: p.boards}
}

// prepare is stage 1 of the pipeline (pipeline.go): steps 1 and 2 of the
// durability order, decode and fold, then the WAL append and its fsync. It
// runs on the Run goroutine, the WAL's only writer; a retry repeats only
// what is not done.
func (b *batch) prepare(context.Context) error {
	p := b.p
	start := time.Now()
	defer func() { b.prepTook += time.Since(start) }()
	if !b.decoded {
		b.startTrace() // poll batches only: replays and timers publish no trace
		b.decode(start)
		b.decoded = true
	}
	if b.walSeq == 0 && p.wal != nil {
		start := time.Now()
		seq, err := p.wal.Append(walRecords(b.recs))
		if err != nil {
			return fmt.Errorf("wal append: %w", err)
		}
		p.cfg.Observer.WALAppend(time.Since(start))
		b.walSeq = seq
	}
	return nil
}

// run is stage 2 of the pipeline: steps 3 to 7 of the durability order,
// for a batch that prepare made durable. The WAL prune (step 8) follows on
// the Run goroutine (Processor.land).
func (b *batch) run(ctx context.Context) error {
	p := b.p
	if !b.decoded || (b.walSeq == 0 && p.wal != nil) {
		return errors.New("batch: stage 2 before the batch was decoded and appended to the WAL")
	}
	if !b.dlqSent && len(b.dlq) > 0 {
		if err := p.cl.ProduceSync(ctx, b.dlq...).FirstErr(); err != nil {
			return fmt.Errorf("produce dlq: %w", err)
		}
		b.dlqSent = true
	}
	if !b.resolved && b.boards.holds(b) {
		b.overlap(ctx)
	}
	if !b.resolved {
		if err := b.recovering(ctx, b.resolve); err != nil {
			return err
		}
		b.resolved = true
	}
	if err := b.recovering(ctx, func(ctx context.Context) error { return b.boards.apply(ctx, b) }); err != nil {
		return err
	}
	if len(b.lateDLQ) > 0 && !b.lateSent {
		if err := p.cl.ProduceSync(ctx, b.lateDLQ...).FirstErr(); err != nil {
			return fmt.Errorf("produce dlq (late): %w", err)
		}
		b.lateSent = true
	}
	b.boards.advance(b)
	if err := b.sendRefused(ctx); err != nil {
		return err
	}
	if len(b.outputs) > 0 {
		if err := p.publish(ctx, b.outputs, b.roomOldest); err != nil {
			return fmt.Errorf("produce output: %w", err)
		}
		p.stats.Published.Add(int64(len(b.outputs)))
		p.cfg.Observer.Published(len(b.outputs))
		b.outputs = nil
	}
	// Commit after everything above. A failed commit (for example after the
	// group moved on) is logged and committed again when the processor is
	// idle (commit.go); meanwhile a next owner redelivers the batch and the
	// watermarks make that harmless.
	if b.rewound || b.afterRewind {
		// The partitions were moved back to re-consume what Redis lost;
		// committing this batch's offsets would skip that on a crash, and
		// so would committing an earlier batch's that failed.
		p.commits.failed.forget(nil)
		p.lg.Info("batch not committed: its partitions were rewound")
	} else if err := p.cl.CommitRecords(ctx, b.recs...); err != nil {
		p.commits.failed.failed(b.recs)
		p.lg.Warn("offset commit failed; the batch will be redelivered and skipped by the watermarks", zap.Error(err))
	} else {
		p.commits.failed.committed(b.recs)
		if b.walSeq > 0 {
			p.commits.walSeq = b.walSeq
		}
	}
	p.acks.add(b.acks, time.Now())
	p.stats.Records.Add(int64(len(b.recs)))
	p.stats.Events.Add(int64(b.events))
	p.stats.DLQ.Add(int64(len(b.dlq) + len(b.lateDLQ)))
	for _, n := range b.ignored {
		p.stats.Ignored.Add(int64(n))
	}
	b.observe()
	b.endTrace()
	return nil
}

// overlap resolves the rooms while the boards' apply runs beside, so that a
// batch holding board events waits for two Redis round trips, not three:
// the boards' keys are not the rooms', and the two steps share no batch
// state. Whatever fails here (Redis lost its data included) is left undone
// for the sequential steps that follow, which handle it as without the
// overlap.
func (b *batch) overlap(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.boards.apply(ctx, b)
	}()
	if err := b.resolve(ctx); err == nil {
		b.resolved = true
	}
	<-done
}

// resolve applies the rooms to Redis, merges their stable lists and stores
// the changed ones, re-reading rooms whose seq another processor moved. The
// sink takes the stable step of the rooms it can within the apply's round
// trip (sink.Store.ApplyMerge); merge does the rest.
func (b *batch) resolve(ctx context.Context) error {
	p := b.p
	b.outputs, b.acks, b.stored = b.outputs[:0], b.acks[:0], 0
	b.endRoomSpans() // those of an attempt that failed
	start := time.Now()
	var states []ranking.RoomState
	var merged []ranking.Merged
	var err error
	acks := p.acks.take(b.roomTS, start, p.cfg.AckDelay)
	if ms, ok := p.store.(mergingStore); ok {
		states, merged, err = ms.ApplyMerge(ctx, b.rooms, acks, b)
	} else {
		states, err = p.store.Apply(ctx, b.rooms, acks)
		merged = make([]ranking.Merged, len(states))
	}
	if err != nil {
		return err
	}
	p.cfg.Observer.RedisRoundTrip("apply", time.Since(start))
	p.acks.done() // cleared in Redis by this Apply
	// Rooms the sink merged and stored in the apply itself are done; the
	// others are merged and stored here.
	rest := make([]ranking.RoomState, 0, len(states))
	for i := range states {
		if !merged[i].Done {
			rest = append(rest, states[i])
			continue
		}
		if u := merged[i].Update; u != nil && !u.StateOnly {
			b.stored++
			b.outputs = append(b.outputs, b.output(u.Room, u.Out))
			b.acks = append(b.acks, ranking.Ack{Room: u.Room, Seq: u.PrevSeq + 1})
		}
	}
	return b.merge(ctx, rest)
}

// Step computes room st's stable update: its next list and hysteresis
// state, and the output when the list changed. It reports false when both
// stay as they are. It records the room's deadline in b.due. A batch is the
// ranking.StableStep the sink's ApplyMerge takes for the rooms it merges.
func (b *batch) Step(st *ranking.RoomState) (ranking.StableUpdate, bool, error) {
	p := b.p
	ts := b.roomTS[st.Room]
	next, state, due, flagsChanged := p.stable(st, ts)
	if b.due != nil {
		b.due[st.Room] = due
	}
	// A new list, or a listed member's flags (spotlight, screen share,
	// audio, video, role) changed: publish (seq + 1). Volume alone never.
	publish := flagsChanged || !slices.Equal(next, st.Stable)
	if !publish && state == st.HState {
		return ranking.StableUpdate{}, false, nil
	}
	u := ranking.StableUpdate{Room: st.Room, PrevSeq: st.Seq, Version: st.Version, List: next,
		PrevState: st.HState, State: state, StateOnly: !publish, Due: due}
	if publish {
		out, err := p.encodeOutput(st, next, ts)
		if err != nil {
			return ranking.StableUpdate{}, false, err
		}
		u.Out = out
	}
	return u, true, nil
}

// merge computes the rooms' new stable lists (and hysteresis states) from
// the states read, stores those that changed with a compare-and-set, and
// queues their outputs; rooms that moved on meanwhile are read and merged
// again. It records each room's hysteresis deadline as stored in b.due.
func (b *batch) merge(ctx context.Context, states []ranking.RoomState) error {
	p := b.p
	for attempt := 0; len(states) > 0; attempt++ {
		if attempt == 10 {
			return fmt.Errorf("stable list of %d rooms kept changing under concurrent writers", len(states))
		}
		var ups []ranking.StableUpdate
		for i := range states {
			st := &states[i]
			if st.Pending != nil {
				// Stored by a run that may have stopped before publishing it.
				b.outputs = append(b.outputs, b.output(st.Room, st.Pending))
				b.acks = append(b.acks, ranking.Ack{Room: st.Room, Seq: st.Seq})
			}
			u, store, err := b.Step(st)
			if err != nil {
				return err
			}
			if store {
				ups = append(ups, u)
			}
		}
		if len(ups) == 0 {
			return nil
		}
		start := time.Now()
		b.storeTrips++
		stored, err := p.store.StoreStable(ctx, ups)
		if err != nil {
			return err
		}
		p.cfg.Observer.RedisRoundTrip("store", time.Since(start))
		var again []string
		for i, u := range ups {
			switch {
			case !stored[i]:
				again = append(again, u.Room)
			case !u.StateOnly:
				b.stored++
				b.outputs = append(b.outputs, b.output(u.Room, u.Out))
				b.acks = append(b.acks, ranking.Ack{Room: u.Room, Seq: u.PrevSeq + 1})
			}
		}
		if len(again) == 0 {
			return nil
		}
		p.stats.Conflicts.Add(int64(len(again)))
		p.cfg.Observer.Conflicts(len(again))
		b.storeTrips++
		if states, err = p.store.Read(ctx, again); err != nil {
			return err
		}
	}
	return nil
}

// decode turns the records into folded room updates and DLQ records.
func (b *batch) decode(now time.Time) {
	p := b.p
	f := b.fold
	f.reset()
	b.applied = make(map[string]int, 3)
	var evs []codec.Event
	b.roomOldest = make(map[string]time.Time)
	for i, r := range b.recs {
		var err error
		evs, err = p.dec.Decode(evs[:0], r.Value, p.topics.source(r.Topic), now)
		if err == nil {
			err = p.checkEvents(evs)
		}
		if err != nil {
			b.dlq = append(b.dlq, p.dlqRecord(r, err.Error()))
			b.dlqReasons = append(b.dlqReasons, reasonClass(err))
			b.boards.carry(b, r, nil) // read all the same
			continue
		}
		if n := b.countIgnored(r.Topic, evs); n > 0 {
			evs = slices.DeleteFunc(evs, func(ev codec.Event) bool { return ev.Type == codec.TypeIgnored })
		}
		b.events += len(evs)
		b.applied[r.Topic] += len(evs)
		f.add(r.Topic, r.Partition, r.Offset, tracedIndex(r, i), evs)
		b.noteLinks(r, i, evs)
		b.noteOldest(r, evs)
		b.boards.carry(b, r, evs)
	}
	b.rooms = f.build()
	b.roomTS = make(map[string]int64, len(f.rooms))
	for i := range f.rooms {
		b.roomTS[f.rooms[i].room] = f.rooms[i].ts
	}
}

// noteOldest records r's timestamp as the oldest of its meeting rooms when
// it is older than what the batch held for them.
func (b *batch) noteOldest(r *kgo.Record, evs []codec.Event) {
	last := ""
	for i := range evs {
		room := evs[i].RoomID
		if evs[i].Type.Board() || room == last {
			continue
		}
		last = room
		if t, ok := b.roomOldest[room]; !ok || r.Timestamp.Before(t) {
			b.roomOldest[room] = r.Timestamp
		}
	}
}

// checkEvents applies the processor's own rules on top of the decoder's: the
// environment's room rule and the score layout's time range.
func (p *Processor) checkEvents(evs []codec.Event) error {
	epoch := p.cfg.Meeting.Epoch().UnixMilli()
	for i := range evs {
		ev := &evs[i]
		if p.cfg.Rooms != nil && !p.cfg.Rooms.Belongs(p.cfg.Env, ev.RoomID) {
			return &ruleError{"room_env", fmt.Sprintf("event[%d].room_id: %q does not belong to environment %s (routes %s)", i, ev.RoomID, p.cfg.Env, p.cfg.Rooms)}
		}
		if !ev.Type.Meeting() {
			continue // the boards check their own time rules; ignored events have none
		}
		if ev.TS < epoch {
			return &ruleError{"ts", fmt.Sprintf("event[%d].ts: %d is before the score epoch %s", i, ev.TS, p.cfg.Meeting.Epoch().UTC().Format(time.RFC3339))}
		}
		if err := p.cfg.Meeting.CheckTime(ev.TS); err != nil {
			return &ruleError{"ts", fmt.Sprintf("event[%d].ts: %v", i, err)}
		}
	}
	return nil
}

func walRecords(recs []*kgo.Record) []wal.Record {
	out := make([]wal.Record, len(recs))
	for i, r := range recs {
		out[i] = wal.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key, Value: r.Value}
	}
	return out
}

// ignoredKey is a topic and an unknown type whose events a batch skipped.
type ignoredKey struct{ topic, typ string }

// countIgnored counts evs' events of unknown types (decoded as
// codec.TypeIgnored) in b.ignored and returns how many there are.
func (b *batch) countIgnored(topic string, evs []codec.Event) int {
	n := 0
	for i := range evs {
		if evs[i].Type != codec.TypeIgnored {
			continue
		}
		if b.ignored == nil {
			b.ignored = map[ignoredKey]int{}
		}
		b.ignored[ignoredKey{topic, evs[i].TypeName}]++
		n++
	}
	return n
}

// observe reports the batch's counts to the observer.
func (b *batch) observe() {
	o := b.p.cfg.Observer
	perTopic := map[string]int{}
	for _, r := range b.recs {
		perTopic[r.Topic]++
	}
	for t, n := range perTopic {
		o.Consumed(t, n)
	}
	for t, n := range b.applied {
		o.Applied(t, n)
	}
	for i, r := range b.dlq {
		o.DLQ(string(r.Headers[1].Value), b.dlqReasons[i])
	}
	for _, r := range b.lateDLQ {
		o.DLQ(string(r.Headers[1].Value), "late")
	}
	for k, n := range b.ignored {
		o.Ignored(k.topic, k.typ, n)
	}
}

// ruleError is a processor rule broken by a record; class labels it in metrics.
type ruleError struct{ class, msg string }

func (e *ruleError) Error() string { return e.msg }

// reasonClass returns the short, bounded label of a rejection: the field of
// a decode error ("ts", "room_id", "json", "record", …) or the rule class.
func reasonClass(err error) string {
	var de *codec.DecodeError
	var re *ruleError
	switch {
	case errors.As(err, &de):
		if de.Field == "" {
			return "record"
		}
		return de.Field
	case errors.As(err, &re):
		return re.class
	default:
		return "other"
	}
}
