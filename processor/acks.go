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

// ackQueue holds the acknowledgements not yet sent to Redis: the newest
// per room (an older one of the same room is moot: its output is no longer
// the pending one), and the same in the order the broker acknowledged them,
// so that a batch finds its rooms' acknowledgements and the expired ones
// without looking at the others.
type ackQueue struct {
	byRoom map[string]ranking.Ack
	fifo   []queuedAck // in acknowledgement order; entries byRoom no longer holds are skipped
	head   int         // fifo[head:] is live
	// take's selection, which done removes
	sent    []ranking.Ack
	newHead int
}

type queuedAck struct {
	ack ranking.Ack
	at  time.Time
}

// add queues acks acknowledged at now.
func (q *ackQueue) add(acks []ranking.Ack, now time.Time) {
	if len(acks) == 0 {
		return
	}
	if q.byRoom == nil {
		q.byRoom = map[string]ranking.Ack{}
	}
	if q.head > 0 && q.head >= len(q.fifo)/2 {
		q.fifo = append(q.fifo[:0], q.fifo[q.head:]...) // compact
		q.head = 0
	}
	for _, a := range acks {
		q.byRoom[a.Room] = a
		q.fifo = append(q.fifo, queuedAck{a, now})
	}
}

// len is the number of acknowledgements waiting.
func (q *ackQueue) len() int { return len(q.byRoom) }

// take returns the acknowledgements to send with an apply of the rooms in
// batch (a set of room ids; nil: none): those of its rooms, which ride in
// the room's script, and those acknowledged at or before now − delay (a
// delay ≤ 0 takes them all). They stay queued until done is called, so a
// failed apply loses none. The returned slice is valid until the next take.
func (q *ackQueue) take(batch map[string]int64, now time.Time, delay time.Duration) []ranking.Ack {
	q.sent = q.sent[:0]
	q.newHead = q.head
	if len(q.byRoom) == 0 {
		return q.sent
	}
	if delay <= 0 {
		for _, a := range q.byRoom {
			q.sent = append(q.sent, a)
		}
		q.newHead = len(q.fifo)
		return q.sent
	}
	if len(batch) < len(q.byRoom) {
		for room := range batch {
			if a, ok := q.byRoom[room]; ok {
				q.sent = append(q.sent, a)
			}
		}
	} else {
		for room, a := range q.byRoom {
			if _, ok := batch[room]; ok {
				q.sent = append(q.sent, a)
			}
		}
	}
	cut := now.Add(-delay)
	for ; q.newHead < len(q.fifo) && !q.fifo[q.newHead].at.After(cut); q.newHead++ {
		e := &q.fifo[q.newHead]
		if a, ok := q.byRoom[e.ack.Room]; ok && a == e.ack {
			if _, inBatch := batch[a.Room]; !inBatch {
				q.sent = append(q.sent, a)
			}
		}
	}
	return q.sent
}

// done drops the acknowledgements the last take returned: the apply that
// carried them cleared their pending marks.
func (q *ackQueue) done() {
	for _, a := range q.sent {
		if cur, ok := q.byRoom[a.Room]; ok && cur == a {
			delete(q.byRoom, a.Room)
		}
	}
	q.head = q.newHead
	if len(q.byRoom) == 0 {
		q.fifo, q.head = q.fifo[:0], 0
	}
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
