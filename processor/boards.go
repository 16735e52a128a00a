package processor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/ranking"
)

// BoardStore is the leaderboard state the processor writes; *board.Store
// implements it.
type BoardStore interface {
	// Apply writes a batch's board events under the boards' applied offset
	// ranges.
	Apply(ctx context.Context, b *board.Batch) (board.Result, error)
	// Expire subtracts the slices that have left their windows by now.
	Expire(ctx context.Context, now time.Time) (board.ExpireResult, error)
	// Adopt makes Apply expect Redis generation gen.
	Adopt(ctx context.Context, gen string) error
	// Settle freezes and snapshots the periods closed at now, writing
	// their records into the boards' outbox.
	Settle(ctx context.Context, now time.Time) (board.SettleResult, error)
	// ClaimSettled claims the outbox records no one claimed within lease.
	ClaimSettled(ctx context.Context, token string, now time.Time, lease time.Duration) ([]board.SettledRecord, error)
	// AckSettled removes a record the broker acknowledged from the outbox.
	AckSettled(ctx context.Context, r board.SettledRecord) error
	// RestoreSettled restores the settled periods from the values of
	// {env}.boards.settled after Redis lost its data.
	RestoreSettled(ctx context.Context, values [][]byte) (int, error)
}

var _ BoardStore = (*board.Store)(nil)

// BoardObserver is implemented by an Observer that also wants the boards'
// counts of each apply (metrics.Pipeline does): events counted, events
// skipped as a producer's repeated id, score updates saturated at
// max-total, and gaps between applied offset ranges closed to keep at most
// 64 per partition (events in such a gap that were never applied are lost
// for the board, so a non-zero rate deserves a look).
type BoardObserver interface {
	BoardsApplied(counted, duplicates, saturated, gapsClosed int)
}

// addBoards feeds the board events of a valid record into the batch's board
// batch. A late event (or one a board cannot encode) sends the record to the
// DLQ with that reason; the record's other events still count.
func (b *batch) addBoards(r *kgo.Record, evs []codec.Event) {
	if b.board == nil {
		return
	}
	if err := b.board.Add(r.Topic, r.Partition, r.Offset, r.Timestamp, evs); err != nil {
		var re *board.RejectError
		class := "other"
		if errors.As(err, &re) {
			class = re.Class
		}
		b.dlq = append(b.dlq, b.p.dlqRecord(r, err.Error()))
		b.dlqReasons = append(b.dlqReasons, class)
		b.lateSeen[recordID{r.Topic, r.Partition, r.Offset}] = true
	}
}

type recordID struct {
	topic     string
	partition int32
	offset    int64
}

// applyBoards writes the batch's board events and marks its offsets applied
// on every board, also when it has no board events (one script call per
// board), so that the boards' applied ranges stay one range per partition.
// Records that a board script found late become DLQ records (reason class
// "late") that the batch produces before it commits. A retry after a
// failure is harmless: the boards' applied ranges skip what was applied.
func (b *batch) applyBoards(ctx context.Context) error {
	p := b.p
	if b.board == nil || b.board.Empty() {
		return nil
	}
	live := b.board == p.boardBatch
	if live && b.board.Len() == 0 && time.Since(p.boardLastApplied) < p.cfg.BoardExpireEvery {
		// No board events: only offsets to mark applied. They ride along
		// with the next batch that has board events (or the first one
		// after BoardExpireEvery), so that meeting-only batches keep their
		// two round trips. Marks lost in a crash leave gaps without board
		// events, which cost nothing.
		p.boardCarry, p.boardCarryEpoch = true, p.assignments.Load()
		return nil
	}
	start := time.Now()
	res, err := p.cfg.BoardStore.Apply(ctx, b.board)
	if err != nil {
		return err
	}
	if live {
		p.boardCarry, p.boardLastApplied = false, time.Now()
	}
	p.cfg.Observer.RedisRoundTrip("boards", time.Since(start))
	p.stats.BoardEvents.Add(int64(res.Applied))
	p.stats.BoardSaturated.Add(int64(res.Saturated))
	if o, ok := p.cfg.Observer.(BoardObserver); ok {
		o.BoardsApplied(res.Applied, res.Duplicate, res.Saturated, res.GapsClosed)
	}
	for _, l := range res.Late {
		id := recordID{l.Topic, l.Partition, l.Offset}
		if b.lateSeen[id] {
			continue
		}
		b.lateSeen[id] = true
		for _, r := range b.recs {
			if r.Topic == l.Topic && r.Partition == l.Partition && r.Offset == l.Offset {
				why := "its slice had left every window"
				switch {
				case l.Settled:
					why = "its period was settled"
				case l.Base:
					why = "its time was below the decay board's base"
				}
				b.lateDLQ = append(b.lateDLQ, p.dlqRecord(r, fmt.Sprintf("board %s: event[%d]: late: %s when it was applied", l.Board, l.Event, why)))
				break
			}
		}
	}
	return nil
}

// overlapBoards applies the boards while the rooms are resolved, so that a
// batch holding board events waits for two Redis round trips, not three:
// the boards' keys are not the rooms', and the two steps share no batch
// state. Whatever fails here (Redis lost its data included) is left undone
// for the sequential steps that follow, which handle it as without the
// overlap.
func (b *batch) overlapBoards(ctx context.Context) {
	done := make(chan error, 1)
	go func() { done <- b.applyBoards(ctx) }()
	if err := b.resolve(ctx); err == nil {
		b.resolved = true
	}
	if err := <-done; err == nil {
		b.boardsDone = true
	}
}

// boardsStep runs applyBoards with the Redis-reset handling of resolve, then
// produces the DLQ records of the late events it found.
func (b *batch) boardsStep(ctx context.Context) error {
	p := b.p
	if !b.boardsDone {
		err := b.applyBoards(ctx)
		if errors.Is(err, ranking.ErrRedisReset) {
			b.forgetStored() // the rebuild below republishes their rooms
			rewound, rerr := p.recoverRedis(ctx)
			if rerr != nil {
				return rerr
			}
			b.rewound = b.rewound || rewound
			err = b.applyBoards(ctx)
		}
		if err != nil {
			return fmt.Errorf("boards: %w", err)
		}
		b.boardsDone = true
	}
	if len(b.lateDLQ) > 0 && !b.lateSent {
		if err := p.cl.ProduceSync(ctx, b.lateDLQ...).FirstErr(); err != nil {
			return fmt.Errorf("produce dlq (late): %w", err)
		}
		b.lateSent = true
	}
	p.noteRecordTimes(b.recs)
	return nil
}

// expireBoards calls BoardStore.Expire every BoardExpireEvery until ctx
// ends. Every call is atomic per board and idempotent, so a failed one is
// simply made again at the next tick.
func (p *Processor) expireBoards(ctx context.Context) {
	t := time.NewTicker(p.cfg.BoardExpireEvery)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			_, err := p.cfg.BoardStore.Expire(ctx, now)
			switch {
			case err != nil && ctx.Err() == nil && !failing:
				p.lg.Warn("board expiry failed; retrying every tick", zap.Error(err))
				failing = true
			case err == nil && failing:
				p.lg.Info("board expiry works again")
				failing = false
			}
		}
	}
}
