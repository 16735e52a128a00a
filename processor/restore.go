package processor

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
)

// restore reads {env}.boards.settled from its start to its current end and
// restores the boards' settlement from it (board.Store RestoreSettled):
// recovery (adopt) calls it before the boards adopt the new Redis
// generation, so before any settlement can run on the emptied Redis, and a
// period settled before the loss is never settled and published again. A
// record still in flight to the broker when the end offsets are listed is
// not seen: its period may then be settled a second time from the replayed
// state (docs/DESIGN.md §8).
func (s *boards) restore(ctx context.Context) error {
	p := s.p
	var values [][]byte
	err := p.readTopic(ctx, p.topics.Settled, func(r *kgo.Record) {
		values = append(values, r.Value)
	})
	if err != nil {
		return fmt.Errorf("recover: read %s: %w", p.topics.Settled, err)
	}
	n, err := s.store.RestoreSettled(ctx, values)
	if err != nil {
		return fmt.Errorf("recover: restore settled periods: %w", err)
	}
	p.lg.Info("settled periods restored from their topic", zap.Int("records", len(values)), zap.Int("snapshots", n))
	return nil
}

// readTopic calls fn with every record of topic from its start to the end
// offsets listed when it begins. A partition whose offsets cannot be listed
// fails the read: recovery must see every partition, or the rooms (and
// settled periods) of the one it skipped would be seeded from nothing and
// publish their seq 1 again.
func (p *Processor) readTopic(ctx context.Context, topic string, fn func(*kgo.Record)) error {
	adm := kadm.NewClient(p.cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("list end offsets: %w", err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fmt.Errorf("list start offsets: %w", err)
	}
	want := map[int32]int64{}
	parts := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			if s, ok := starts.Lookup(o.Topic, o.Partition); !ok || s.Offset < o.Offset {
				want[o.Partition] = o.Offset
				parts[o.Partition] = kgo.NewOffset().AtStart()
			}
		}
	})
	if len(want) == 0 {
		return nil
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(p.cfg.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts})}, p.cfg.KafkaOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		fs.EachError(func(_ string, _ int32, e error) { err = e })
		if err != nil {
			return err
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= want[r.Partition] {
				delete(want, r.Partition)
			}
			fn(r)
		})
	}
	return nil
}
