package processor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/wal"
)

// ReplayStats counts what ReplayWAL did.
type ReplayStats struct {
	Batches, Records, Events, Rejected int
	Rooms                              int // rooms touched
	Changed                            int // rooms whose stable list changed (stored as pending output)
}

// ReplayWAL applies the WAL's batches with seq >= from to the store, exactly
// as the processor applied them: decoded with the same rules, guarded by the
// watermarks (so replaying what Redis already holds changes nothing), and
// with the touched rooms' stable lists merged and stored. Without a Kafka
// connection it publishes nothing: a changed list stays pending in Redis and
// the running processor publishes it when it next touches the room.
// It takes cfg's settings of applying a batch, checked as Validate checks
// them (Env, TopicPrefix, TopN, Rooms, Decode, Meeting, the stable
// strategy, MaxRoomsPerApply, Boards with BoardStore, Logger); the Kafka
// settings are not used.
func ReplayWAL(ctx context.Context, cfg Config, store Store, w WAL, from uint64) (ReplayStats, error) {
	cfg.withDefaults()
	if err := cfg.validateApply(); err != nil {
		return ReplayStats{}, err
	}
	if len(cfg.Boards) > 0 && cfg.BoardStore == nil {
		return ReplayStats{}, errors.New("boards are configured but Config.BoardStore is nil")
	}
	p := replayer(cfg, store, w)
	st, rb, err := p.replayLog(ctx, from, false)
	if err != nil {
		return st, err
	}
	st.Changed = rb.stored
	return st, nil
}

// replayer is the Processor ReplayWAL runs: no Kafka client, and the same
// stable step as the processor's (--stability), so that a replay of a
// hysteresis processor's WAL does not store lists merged without it.
func replayer(cfg Config, store Store, w WAL) *Processor {
	p := &Processor{cfg: cfg, topics: TopicsFor(cfg.TopicPrefix, cfg.Env), store: store, wal: w,
		dec: codec.NewDecoder(cfg.Decode), lg: cfg.Logger, strategy: newStableStrategy(&cfg)}
	p.boards = newBoardStage(p, false)
	return p
}

// replayLog applies the WAL's batches from seq from (past the watermarks when
// force is set), then merges and stores the stable lists of every touched
// room. The returned batch holds the outputs to publish and their acks.
func (p *Processor) replayLog(ctx context.Context, from uint64, force bool) (ReplayStats, *batch, error) {
	var st ReplayStats
	touched := map[string]bool{}
	var f folder                     // not a poll batch's: recovery runs while a batch still holds its folder's updates
	boards := newBoardStage(p, true) // likewise not p.boards: its batch in hand is the live one
	err := p.wal.Replay(from, func(_ uint64, recs []wal.Record) error {
		b := &batch{p: p, recs: kgoRecords(recs), fold: &f, boards: boards}
		b.decode(time.Now())
		// Boards are applied under their watermarks even when rebuilding:
		// their operations are not idempotent, and a Redis that lost its
		// data lost the watermarks too, so each record counts once. Late
		// records were sent to the DLQ when first consumed.
		if err := boards.apply(ctx, b); err != nil {
			return err
		}
		var err error
		switch {
		case len(b.rooms) == 0:
		case force:
			err = p.store.Rebuild(ctx, b.rooms)
		default:
			_, err = p.store.Apply(ctx, b.rooms, nil)
		}
		if err != nil {
			return err
		}
		for _, r := range b.rooms {
			touched[r.Room] = true
		}
		st.Batches++
		st.Records += len(recs)
		st.Events += b.events
		st.Rejected += len(b.dlq)
		return nil
	})
	if err != nil {
		return st, nil, fmt.Errorf("replay wal: %w", err)
	}
	rb := newBatch(p, nil)
	rb.roomTS = map[string]int64{}
	for room := range touched {
		rb.rooms = append(rb.rooms, ranking.RoomUpdate{Room: room})
	}
	if err := rb.resolve(ctx); err != nil {
		return st, nil, fmt.Errorf("stable lists: %w", err)
	}
	st.Rooms = len(touched)
	return st, rb, nil
}
