package processor

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/codec"
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
// counts of each apply (metrics.Processor does): events counted, events
// skipped as a producer's repeated id, score updates saturated at
// max-total, and gaps between applied offset ranges closed to keep at most
// 64 per partition (events in such a gap that were never applied are lost
// for the board, so a non-zero rate deserves a look).
type BoardObserver interface {
	BoardsApplied(counted, duplicates, saturated, gapsClosed int)
}

// boardStage is the leaderboards' share of the processor's work, as the
// batch and the loop ask for it: a batch hands the stage each record it
// decodes (carry), has what it carried applied beside its rooms or after
// them (holds, apply), and moves the settlement clock (advance); Run runs
// the settlement and expiry loops (settle, expire); New and recovery make
// the boards expect a Redis generation (adopt). boards implements it;
// noBoards, when no boards are configured, does nothing.
type boardStage interface {
	// carry takes a record of b as decode reads it: its offset is marked
	// applied with the batch (every record read, valid or not, so that the
	// boards' applied ranges stay contiguous), and the board events of evs
	// are added; evs is nil for a record decode sent to the DLQ (a valid
	// one holds at least one event). A record with an event late on
	// arrival, or one a board cannot encode, becomes a DLQ record of b; its
	// other events still count.
	carry(b *batch, r *kgo.Record, evs []codec.Event)
	// holds reports whether b carried board events not applied yet: the
	// batch then has them applied beside its rooms (batch.overlap).
	holds(b *batch) bool
	// apply writes the board events b carried and marks its offsets
	// applied on every board, or leaves the marks to a later batch when b
	// carried no board events. Records the board scripts found late join
	// b.lateDLQ. Once it has succeeded for b it does nothing; a failed
	// attempt is harmless to repeat (the boards' applied ranges skip what
	// was applied). It may run beside the rooms' resolve.
	apply(ctx context.Context, b *batch) error
	// advance ends b's board work, once its board events are applied and
	// the DLQ records of the late ones published: it moves the settlement
	// clock to the newest record time of b and wakes the settle loop when
	// that passed the next period's close. An apply of b after it does
	// nothing.
	advance(b *batch)
	// settle settles the closed periods and publishes their records until
	// ctx ends (settle.go).
	settle(ctx context.Context)
	// expire subtracts the slices that have left their windows, every
	// BoardExpireEvery, until ctx ends.
	expire(ctx context.Context)
	// adopt makes the boards expect Redis generation gen. After Redis lost
	// its data (lost), it first restores the settled periods from their
	// topic (restore.go), so that no settlement runs on the emptied Redis
	// before they are back.
	adopt(ctx context.Context, gen string, lost bool) error
}

// newBoardStage returns the board stage of p, noBoards when p has no
// boards. A replay stage (replay set) applies the batches of a WAL replay
// (replayLog), which runs while a live batch is in hand: it has a board
// batch of its own, carries no offsets to a later batch, and publishes
// nothing.
func newBoardStage(p *Processor, replay bool) boardStage {
	if len(p.cfg.Boards) == 0 {
		return noBoards{}
	}
	s := &boards{p: p, store: p.cfg.BoardStore, replay: replay, events: board.NewBatch(p.cfg.Boards)}
	if !replay {
		s.kick = make(chan struct{}, 1)
		s.token = newSettleToken()
	}
	return s
}

// boards is the board stage of a processor with boards. It serves one
// batch at a time: with boards the batch pipeline is off (pipeline.go), and
// a WAL replay has a stage of its own. The first record carried of a batch
// starts that batch's work, advance ends it (so that a finished batch is
// not kept for the stage); carry and apply run on the batch's goroutine
// (apply perhaps beside its resolve), advance may run beside settle, and
// settle and expire run on goroutines of their own.
type boards struct {
	p      *Processor // its client, logger, observer, stats, topics and DLQ records
	store  BoardStore
	replay bool

	// The batch in hand.
	events *board.Batch      // its board events and the offsets it read; reused
	cur    *batch            // the batch events holds; nil when its work has ended
	done   bool              // cur's board events are applied (or their marks left to a later batch)
	late   map[recordID]bool // cur's records already in the DLQ for a late board event

	// Deferred coverage: the offsets of batches without board events are
	// carried into a later batch's apply instead of costing a round trip
	// of their own.
	carrying    bool
	carryEpoch  int64     // the group's assignment changes when the carry began
	lastApplied time.Time // last apply of a live batch

	// Settlement (settle.go): the newest record time seen, and a wake-up
	// of the settle loop when it passes the next period's close.
	clock     atomic.Int64 // Unix ms
	nextClose atomic.Int64 // Unix ms; 0: unknown
	kick      chan struct{}
	token     string // names this processor's claims on the outbox
}

type recordID struct {
	topic     string
	partition int32
	offset    int64
}

// carry implements boardStage.
func (s *boards) carry(b *batch, r *kgo.Record, evs []codec.Event) {
	if s.cur != b {
		s.begin(b)
	}
	s.events.Cover(r.Topic, r.Partition, r.Offset, r.Offset)
	if evs == nil {
		return
	}
	if err := s.events.Add(r.Topic, r.Partition, r.Offset, r.Timestamp, evs); err != nil {
		var re *board.RejectError
		class := "other"
		if errors.As(err, &re) {
			class = re.Class
		}
		b.dlq = append(b.dlq, s.p.dlqRecord(r, err.Error()))
		b.dlqReasons = append(b.dlqReasons, class)
		s.late[recordID{r.Topic, r.Partition, r.Offset}] = true
	}
}

// begin makes b the batch in hand, keeping the offsets carried so far.
func (s *boards) begin(b *batch) {
	s.cur, s.done = b, false
	s.late = map[recordID]bool{}
	if s.carrying && s.carryEpoch == s.p.group.changes.Load() {
		s.events.ResetKeepCovers()
		return
	}
	// Covers are never carried across an assignment change: the
	// partitions may have been read by another processor since.
	s.carrying = false
	s.events.Reset()
}

// holds implements boardStage.
func (s *boards) holds(b *batch) bool { return s.cur == b && !s.done && s.events.Len() > 0 }

// apply implements boardStage. It applies the board events also when the
// batch has none (one script call per board), so that the boards' applied
// ranges stay one range per partition; but a live batch without board
// events usually leaves its offsets to a later batch.
func (s *boards) apply(ctx context.Context, b *batch) error {
	if s.cur != b || s.done {
		return nil
	}
	if err := s.write(ctx, b); err != nil {
		return fmt.Errorf("boards: %w", err)
	}
	s.done = true
	return nil
}

func (s *boards) write(ctx context.Context, b *batch) error {
	p := s.p
	if s.events.Empty() {
		return nil
	}
	if !s.replay && s.events.Len() == 0 && time.Since(s.lastApplied) < p.cfg.BoardExpireEvery {
		// No board events: only offsets to mark applied. They ride along
		// with the next batch that has board events (or the first one
		// after BoardExpireEvery), so that meeting-only batches keep their
		// two round trips. Marks lost in a crash leave gaps without board
		// events, which cost nothing.
		s.carrying, s.carryEpoch = true, p.group.changes.Load()
		return nil
	}
	start := time.Now()
	res, err := s.store.Apply(ctx, s.events)
	if err != nil {
		return err
	}
	if !s.replay {
		s.carrying, s.lastApplied = false, time.Now()
	}
	p.cfg.Observer.RedisRoundTrip("boards", time.Since(start))
	p.stats.BoardEvents.Add(int64(res.Applied))
	p.stats.BoardSaturated.Add(int64(res.Saturated))
	if o, ok := p.cfg.Observer.(BoardObserver); ok {
		o.BoardsApplied(res.Applied, res.Duplicate, res.Saturated, res.GapsClosed)
	}
	for _, l := range res.Late {
		id := recordID{l.Topic, l.Partition, l.Offset}
		if s.late[id] {
			continue
		}
		s.late[id] = true
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

// expire implements boardStage. Every call is atomic per board and
// idempotent, so a failed one is simply made again at the next tick.
func (s *boards) expire(ctx context.Context) {
	t := time.NewTicker(s.p.cfg.BoardExpireEvery)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			_, err := s.store.Expire(ctx, now)
			switch {
			case err != nil && ctx.Err() == nil && !failing:
				s.p.lg.Warn("board expiry failed; retrying every tick", zap.Error(err))
				failing = true
			case err == nil && failing:
				s.p.lg.Info("board expiry works again")
				failing = false
			}
		}
	}
}

// adopt implements boardStage.
func (s *boards) adopt(ctx context.Context, gen string, lost bool) error {
	if lost {
		if err := s.restore(ctx); err != nil {
			return err
		}
	}
	return s.store.Adopt(ctx, gen)
}

// noBoards is the board stage of a processor without boards.
type noBoards struct{}

func (noBoards) carry(*batch, *kgo.Record, []codec.Event)  {}
func (noBoards) holds(*batch) bool                         { return false }
func (noBoards) apply(context.Context, *batch) error       { return nil }
func (noBoards) advance(*batch)                            {}
func (noBoards) settle(context.Context)                    {}
func (noBoards) expire(context.Context)                    {}
func (noBoards) adopt(context.Context, string, bool) error { return nil }

var (
	_ boardStage = (*boards)(nil)
	_ boardStage = noBoards{}
)
