package processor

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/ranking"
)

// Acknowledgements of published outputs (docs/DESIGN.md §7: a room's stable
// hash keeps an output "pending" until the broker acknowledged it, so that a
// crash before the publish republishes it).
//
// Clearing a pending mark costs a script call of its own unless it rides in
// the room's next apply script, where it costs nothing. At moderate rates a
// room's next batch comes within a second or two, so an acknowledgement
// waits up to Config.AckDelay for the room to come back, and is sent on its
// own only after that (or when the processor is idle or stops). The price is
// bounded: an output whose acknowledgement was still waiting when its
// processor crashed, or lost the room's partition, is published again with
// its seq and identical content, which subscribers already drop (docs/DESIGN.md
// §2: a redelivery may repeat a seq, always with identical content).

// ackQueue holds the acknowledgements not yet sent to Redis, in publish
// order, each with the time the broker acknowledged its output.
type ackQueue struct {
	acks []ranking.Ack
	at   []time.Time
	// take's split: the acknowledgements it returned, and the rest with
	// their times, which done makes the queue.
	sent   []ranking.Ack
	keep   []ranking.Ack
	keepAt []time.Time
}

// add queues acks acknowledged at now.
func (q *ackQueue) add(acks []ranking.Ack, now time.Time) {
	for _, a := range acks {
		q.acks = append(q.acks, a)
		q.at = append(q.at, now)
	}
}

// len is the number of acknowledgements waiting.
func (q *ackQueue) len() int { return len(q.acks) }

// take returns the acknowledgements to send with an apply of the rooms in
// batch (a set of room ids; nil: none): those of its rooms, which ride in
// the room's script, and those acknowledged at or before now − delay (a
// delay ≤ 0 takes them all). They stay queued until done is called, so a
// failed apply loses none. The returned slice is valid until the next take.
func (q *ackQueue) take(batch map[string]int64, now time.Time, delay time.Duration) []ranking.Ack {
	q.sent, q.keep, q.keepAt = q.sent[:0], q.keep[:0], q.keepAt[:0]
	cut := now.Add(-delay)
	for i, a := range q.acks {
		_, inBatch := batch[a.Room]
		if delay <= 0 || inBatch || !q.at[i].After(cut) {
			q.sent = append(q.sent, a)
			continue
		}
		q.keep = append(q.keep, a)
		q.keepAt = append(q.keepAt, q.at[i])
	}
	return q.sent
}

// done drops the acknowledgements the last take returned: the apply that
// carried them cleared their pending marks.
func (q *ackQueue) done() {
	q.acks, q.keep = q.keep, q.acks
	q.at, q.keepAt = q.keepAt, q.at
}

// flushAcks sends every waiting acknowledgement on its own, in one round
// trip: the processor polled nothing, or stops. A failure is logged and the
// acknowledgements stay queued; at worst their outputs are published again
// after a crash.
func (p *Processor) flushAcks(ctx context.Context) {
	if p.acks.len() == 0 {
		return
	}
	if _, err := p.store.Apply(ctx, nil, p.acks.take(nil, time.Now(), 0)); err != nil {
		p.lg.Warn("acknowledging published outputs failed; trying again later", zap.Int("outputs", p.acks.len()), zap.Error(err))
		return
	}
	p.acks.done()
}
