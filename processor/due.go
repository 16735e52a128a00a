package processor

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/stability"
)

// dueBatch is how many due rooms one timer pass steps at most.
const dueBatch = 512

// maybeStepDue runs the timer when DueInterval has passed since it last did.
// It runs between poll batches: right after a batch's stage 2, on that
// batch's goroutine, or on the Run goroutine with the pipeline empty
// (pipeline.go), so it never overlaps a batch's stage 2. A failed pass is logged and left for the next: the due set still
// holds its rooms.
//
// It does not run while a rebuild after a Redis data loss is unfinished
// (recover.go): the store has adopted the new generation by then, so an
// apply would pass, but the rooms' seqs are not seeded from the output
// topic yet, and a due room stepped over its emptied stable hash would
// store and publish seq 1 again, with other content. The next batch or
// idle check finishes the rebuild first.
func (p *Processor) maybeStepDue(ctx context.Context) {
	if p.strategy.hyst == nil || p.gen.rebuild || time.Since(p.strategy.lastDue) < p.cfg.Stable.DueInterval {
		return
	}
	now := time.Now()
	p.strategy.lastDue = now
	// The last batch's apply peeked at the due set: when that is recent and
	// nothing was due by now, there is nothing to look for.
	if peek, ok := p.store.PeekDue(); ok && now.Sub(peek.Seen) < p.cfg.Stable.DueInterval && (peek.At == 0 || peek.At > now.UnixMilli()) {
		return
	}
	if _, err := p.stepDue(ctx, now.UnixMilli()); err != nil && ctx.Err() == nil {
		p.lg.Warn("stepping due rooms failed; they stay due", zap.Error(err))
	}
}

// stepDue steps the rooms of the due set whose deadline is at or before
// until (Unix ms): each is read (clearing the acknowledgements of the last
// batch, as a batch's apply does), stepped at its deadline, stored if it
// changed and published; then the due set is settled to the rooms' new
// deadlines (see sink's due set for why it reads the states once more). It
// returns how many rooms it stepped.
func (p *Processor) stepDue(ctx context.Context, until int64) (int, error) {
	start := time.Now()
	trips := 1 // Redis round trips of this pass, for Stats.DueRoundTrips
	defer func() { p.stats.DueRoundTrips.Add(int64(trips)) }()
	due, err := p.store.DueRooms(ctx, until, dueBatch)
	if err != nil || len(due) == 0 {
		return 0, err
	}
	p.cfg.Observer.RedisRoundTrip("due", time.Since(start))
	b := newBatch(p, nil)
	b.roomTS = make(map[string]int64, len(due))
	b.due = make(map[string]int64, len(due))
	rooms := make([]string, len(due))
	for i, d := range due {
		rooms[i] = d.Room
		b.rooms = append(b.rooms, ranking.RoomUpdate{Room: d.Room})
		b.roomTS[d.Room] = d.At
	}
	trips++
	states, err := p.store.Apply(ctx, b.rooms, p.acks.take(b.roomTS, time.Now(), p.cfg.AckDelay))
	if err != nil {
		return 0, err
	}
	p.acks.done()
	err = b.merge(ctx, states)
	trips += b.storeTrips
	if err != nil {
		return 0, err
	}
	if len(b.outputs) > 0 {
		if err := p.cl.ProduceSync(ctx, b.outputs...).FirstErr(); err != nil {
			// The lists are stored as pending outputs: the next read of
			// these rooms publishes them.
			return 0, err
		}
		p.stats.Published.Add(int64(len(b.outputs)))
		p.cfg.Observer.Published(len(b.outputs))
	}
	p.acks.add(b.acks, time.Now())
	p.stats.DueSteps.Add(int64(len(due)))

	next := make([]int64, len(due))
	for i, d := range due {
		next[i] = b.due[d.Room]
	}
	trips += 2 // settle, then read the states again
	if err := p.store.SettleDue(ctx, due, next); err != nil {
		return len(due), err
	}
	hstates, err := p.store.DueStates(ctx, rooms)
	if err != nil {
		return len(due), err
	}
	var arm []ranking.DueRoom
	var hs stability.State
	for i, text := range hstates {
		if hs.UnmarshalText([]byte(text)) != nil {
			continue
		}
		if at := p.strategy.hyst.Next(&hs); at > 0 {
			arm = append(arm, ranking.DueRoom{Room: rooms[i], At: at})
		}
	}
	if len(arm) > 0 {
		trips++
	}
	return len(due), p.store.ArmDue(ctx, arm)
}
