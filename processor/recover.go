package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/stability"
	"github.com/rostrumhq/rostrum/wal"
)

// Recovery after Redis lost its data.
//
// Every Apply round trip also reads a generation marker that is written once
// per Redis data set. When it is missing or changed (Redis restarted without
// persistence, failed over to an empty replica, or was flushed), the
// processor rebuilds before it goes on with the batch in hand:
//
//  1. adopt the (new) marker; restore the boards' settled periods from
//     {env}.boards.settled (restore.go) before the boards adopt it;
//  2. seed every room's stable list and seq from the last record per room on
//     the output topic, so seq keeps growing and tiles keep their slots;
//  3. apply every batch the WAL retains, past the watermarks (the batch in
//     hand may already have raised them past older batches; member
//     registers make a second apply harmless);
//  4. merge, store and publish the stable lists of all rebuilt rooms;
//  5. if the WAL no longer reaches back RebuildWindow (it was pruned), rewind
//     this processor's partitions to the offsets of RebuildWindow ago and
//     re-consume; the batch in hand is then not committed.
//
// Each processor of the group rebuilds from its own WAL; together they cover
// the partitions they consumed. The boards record the offset ranges they
// applied, so the WALs may replay a partition's ranges in any order.

// recoverRedis runs the steps above. It returns rewound = true when the
// partitions were rewound (step 5).
func (p *Processor) recoverRedis(ctx context.Context) (rewound bool, err error) {
	start := time.Now()
	p.lg.Warn("redis lost its data: rebuilding from the output topic and the WAL")
	// Until the rebuild has finished, every batch attempt (and the next
	// start, through the generation file) runs it again: the store adopts
	// the new generation below, so Apply would not report the loss twice.
	p.gen.rebuild = true
	gen, err := p.store.EnsureGeneration(ctx)
	if err != nil {
		return false, err
	}
	p.store.AdoptGeneration(gen)
	// The boards' settled periods first (once the boards adopt the new
	// generation, the settle loop may run on them), then the new generation
	// on the boards, before the log replay below re-applies their events
	// under their (lost) watermarks.
	if err := p.boards.adopt(ctx, gen, true); err != nil {
		return false, err
	}

	seeds, err := p.lastOutputs(ctx)
	if err != nil {
		return false, fmt.Errorf("recover: read %s: %w", p.topics.TopN, err)
	}
	if _, err := p.store.RestoreStable(ctx, seeds); err != nil {
		return false, fmt.Errorf("recover: restore stable lists: %w", err)
	}

	covered := p.walCovers(p.cfg.RebuildWindow)
	var st ReplayStats
	rb := newBatch(p, nil)
	if p.wal != nil {
		if st, rb, err = p.replayLog(ctx, 1, true); err != nil {
			return false, fmt.Errorf("recover: %w", err)
		}
	}
	if len(rb.outputs) > 0 {
		if err := p.cl.ProduceSync(ctx, rb.outputs...).FirstErr(); err != nil {
			return false, fmt.Errorf("recover: publish: %w", err)
		}
		p.stats.Published.Add(int64(len(rb.outputs)))
	}
	p.acks.add(rb.acks, time.Now())
	if !covered {
		if err := p.rewind(ctx, time.Now().Add(-p.cfg.RebuildWindow)); err != nil {
			return false, err
		}
	}
	if err := p.saveGeneration(gen); err != nil {
		return false, fmt.Errorf("recover: %w", err)
	}
	p.gen.rebuild = false
	p.stats.RedisResets.Add(1)
	p.cfg.Observer.RedisReset()
	p.lg.Warn("redis rebuilt", zap.Int("rooms_seeded_from_output", len(seeds)), zap.Int("wal_batches", st.Batches),
		zap.Int("wal_records", st.Records), zap.Int("rooms_rebuilt", st.Rooms), zap.Bool("rewound", !covered),
		zap.Duration("took", time.Since(start)))
	return !covered, nil
}

// recovering runs step, one of the batch's Redis steps. When step finds
// that Redis lost its data, it drops what the batch stored and has not
// published (forgetStored), rebuilds (recoverRedis) and runs step again.
func (b *batch) recovering(ctx context.Context, step func(context.Context) error) error {
	err := step(ctx)
	if !errors.Is(err, ranking.ErrRedisReset) {
		return err
	}
	b.forgetStored() // the rebuild below republishes their rooms
	rewound, err := b.p.recoverRedis(ctx)
	if err != nil {
		return err
	}
	b.rewound = b.rewound || rewound
	return step(ctx)
}

// forgetStored drops the outputs (and their acks) that the batch's resolve
// stored in Redis and has not published yet, before a rebuild after Redis
// lost its data. Their pending marks went with the data, so the rebuild
// cannot see them: it seeds the rooms' seqs from the output topic, replays
// the WAL (this batch included: it was appended before the resolve), and
// stores and publishes the rooms' lists under the same seqs. Publishing the
// dropped outputs afterwards would repeat those seqs with other content.
func (b *batch) forgetStored() {
	if b.resolved {
		b.outputs, b.acks, b.stored = nil, nil, 0
	}
}

// walCovers reports whether the WAL holds everything this processor applied
// in the last window: nothing was ever pruned, or its oldest batch is older.
func (p *Processor) walCovers(window time.Duration) bool {
	if p.wal == nil {
		return false
	}
	segs := p.wal.Segments()
	if len(segs) == 0 || segs[0].FirstSeq <= 1 {
		return true
	}
	covered := false
	_ = p.wal.Replay(segs[0].FirstSeq, func(_ uint64, recs []wal.Record) error {
		if len(recs) > 0 && time.Since(recs[0].Timestamp) >= window {
			covered = true
		}
		return errStop
	})
	return covered
}

var errStop = errors.New("stop")

// rewind moves this processor's partitions back to the first offsets at or
// after since, so that their records are consumed (and applied) again.
func (p *Processor) rewind(ctx context.Context, since time.Time) error {
	listed, err := kadm.NewClient(p.cl).ListOffsetsAfterMilli(ctx, since.UnixMilli(), p.topics.Inputs()...)
	if err != nil {
		return fmt.Errorf("recover: list offsets: %w", err)
	}
	set := map[string]map[int32]kgo.EpochOffset{}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			return
		}
		if set[o.Topic] == nil {
			set[o.Topic] = map[int32]kgo.EpochOffset{}
		}
		set[o.Topic][o.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o.Offset}
	})
	p.cl.SetOffsets(set) // only partitions this client consumes are moved
	p.lg.Warn("partitions rewound to re-consume what the WAL no longer holds", zap.Time("since", since))
	return nil
}

// lastOutputs reads the output topic from its start to its current end and
// returns the highest-seq record of every room.
func (p *Processor) lastOutputs(ctx context.Context) ([]ranking.PublishedList, error) {
	best := map[string]ranking.PublishedList{}
	err := p.readTopic(ctx, p.topics.TopN, func(r *kgo.Record) {
		var o codec.Output
		if json.Unmarshal(r.Value, &o) != nil || o.RoomID == "" || o.Seq <= best[o.RoomID].Seq {
			return
		}
		list := make([]string, len(o.Top))
		var hs stability.State
		for i, m := range o.Top {
			list[i] = m.UserID
			role, _ := codec.ParseRole(m.Role)
			hs.Shown = append(hs.Shown, ranking.Flags(codec.MemberScore{Spotlight: m.Spotlight, ScreenShare: m.ScreenShare,
				Audio: m.Audio, Video: m.Video, Role: role}))
		}
		best[o.RoomID] = ranking.PublishedList{Room: o.RoomID, Seq: o.Seq, List: list, State: hs.String()}
	})
	if err != nil || len(best) == 0 {
		return nil, err
	}
	seeds := make([]ranking.PublishedList, 0, len(best))
	for _, s := range best {
		seeds = append(seeds, s)
	}
	return seeds, nil
}

func kgoRecords(recs []wal.Record) []*kgo.Record {
	out := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		out[i] = &kgo.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp,
			Key: append([]byte(nil), r.Key...), Value: append([]byte(nil), r.Value...)}
	}
	return out
}
