package processor

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/ranking"
)

// The room members cap.
//
// The cap itself is enforced by the sink's apply script (sink.Config
// MaxMembers), where the member count and the admission of a new member are
// one atomic step, so processors applying the same room concurrently cannot
// overshoot it. The script reports the users it refused; the processor sends
// every record of the batch that carries an event of a refused user to the
// DLQ, with the reason, before it commits the batch. Events of admitted
// members in the same record (an array record) are applied: the DLQ copy
// documents what was refused, it does not undo the rest. A redelivered batch
// gets the same refusals from the script and sends the same DLQ records
// again, as for any other rejected record.

// refusals holds refused users per room, deduplicated across the attempts
// of one batch.
type refusals map[string]map[string]bool

func (r *refusals) add(states []ranking.RoomState) {
	for i := range states {
		for _, u := range states[i].Refused {
			if *r == nil {
				*r = refusals{}
			}
			if (*r)[states[i].Room] == nil {
				(*r)[states[i].Room] = map[string]bool{}
			}
			(*r)[states[i].Room][u] = true
		}
	}
}

// refusalRecorder is a Store that records the members each apply refused
// (ranking.RoomState.Refused) until sendRefused takes them. It sits under
// the chunking, so that the refusals of the chunks applied before a failed
// one are kept.
type refusalRecorder struct {
	Store
	refused refusals
}

// Apply applies rooms and records their refusals.
func (r *refusalRecorder) Apply(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack) ([]ranking.RoomState, error) {
	st, err := r.Store.Apply(ctx, rooms, acks)
	r.refused.add(st)
	return st, err
}

// ApplyMerge is Apply with the stable step taken within the apply where the
// store can (see mergingStore); a store that cannot merges nothing.
func (r *refusalRecorder) ApplyMerge(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack, step ranking.StableStep) ([]ranking.RoomState, []ranking.Merged, error) {
	ms, ok := r.Store.(mergingStore)
	if !ok {
		st, err := r.Apply(ctx, rooms, acks)
		return st, make([]ranking.Merged, len(st)), err
	}
	st, m, err := ms.ApplyMerge(ctx, rooms, acks, step)
	r.refused.add(st)
	return st, m, err
}

// sendRefused publishes to the DLQ the records of b that carry an event of a
// refused member, and waits for the acknowledgements. On failure the
// refusals are kept for the next attempt.
func (b *batch) sendRefused(ctx context.Context) error {
	p := b.p
	if p.refusals == nil || len(p.refusals.refused) == 0 {
		return nil
	}
	ref := p.refusals.refused
	p.refusals.refused = nil
	recs, reasons := b.refusedRecords(ref, time.Now())
	if len(recs) == 0 {
		return nil
	}
	if err := p.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		p.refusals.refused = ref
		return fmt.Errorf("produce dlq (members cap): %w", err)
	}
	p.stats.DLQ.Add(int64(len(recs)))
	for i, r := range recs {
		p.cfg.Observer.DLQ(string(r.Headers[1].Value), reasons[i])
	}
	return nil
}

// refusedRecords decodes the batch's records again (only when something was
// refused, which is rare) and returns a DLQ copy of each record holding an
// event of a refused member, with the reason class of each.
func (b *batch) refusedRecords(ref refusals, now time.Time) ([]*kgo.Record, []string) {
	p := b.p
	var out []*kgo.Record
	var classes []string
	var evs []codec.Event
	for _, r := range b.recs {
		var err error
		evs, err = p.dec.Decode(evs[:0], r.Value, p.topics.source(r.Topic), now)
		if err != nil || p.checkEvents(evs) != nil {
			continue // already in the DLQ for its own reason
		}
		for i := range evs {
			ev := &evs[i]
			if !ev.Type.Meeting() || !ref[ev.RoomID][ev.UserID] {
				continue
			}
			reason := fmt.Sprintf("event[%d].user_id: room %q has reached its members cap; new member %q refused", i, ev.RoomID, ev.UserID)
			out = append(out, p.dlqRecord(r, reason))
			classes = append(classes, "room_members")
			break
		}
	}
	return out, classes
}
