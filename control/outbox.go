package control

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// The outbox makes every state change reach Kafka without a transaction
// across Redis and Kafka. A write (start, stop, layout put):
//
//  1. enters "<room>\n<nonce>" in the environment's outbox index (a sorted
//     set outside the room's slot, scored with the time it began);
//  2. runs the room's script, which makes the change and, in the same
//     atomic step, writes the record to the room's outbox hash with a lease
//     (Options.Lease) that keeps it the writer's to publish;
//  3. produces the record and waits for Kafka's acknowledgement (at most
//     Options.ProduceTimeout, shorter than the lease);
//  4. deletes the outbox entry and its index member; then answers.
//
// An entry whose lease has ended belongs to a writer that died (or could
// not publish): the next request for the room, whose script reports it,
// or a sweep (Run, on every instance) claims it with claim.lua (a new
// lease, so two claimers never both publish it), publishes it, and deletes
// it. Published records keep the token or version the step gave them: the
// outbox holds the record itself, not the means to rebuild it.
//
// The index obeys one rule: a room with an outbox entry has an index
// member. A writer enters its member before its step, and removes it only
// after deleting its own entry; a sweep removes a member only after a claim
// found no entry of the room still leased to someone else and it published
// and deleted all it claimed. An entry written after that claim has its own
// writer's member. So a sweep that reads the index finds every entry left
// behind, also across the slots of a Redis Cluster, without a transaction
// across slots; a stale member costs one claim that finds nothing.
//
// Without a crash a record is produced once: its writer, alone within the
// lease, produces it and deletes it. A writer that dies after Kafka
// acknowledged the record but before the delete leaves it to be produced
// again, with the same bytes (same token): consumers drop a token they
// have already acted on.

// recover claims room's outbox entries whose lease has ended, publishes
// them and deletes them. It returns how many it published and how many
// entries are still leased to others.
func (s *Service) recover(ctx context.Context, room string) (published, left int, err error) {
	k := roomKeys(s.opt.Env, room)
	v, err := s.lua.Run(ctx, claimScript, []string{k.Out}, ms(s.opt.Lease)).Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("control: claim outbox of %s: %w", room, err)
	}
	if len(v) == 0 {
		return 0, 0, fmt.Errorf("control: claim outbox of %s: empty reply", room)
	}
	left = int(num(v[0]))
	for i := 1; i+1 < len(v); i += 2 {
		field, record := str(v[i]), str(v[i+1])
		if err := s.publish(ctx, s.topicOf(field), room, record); err != nil {
			return published, left, err
		}
		if err := s.rc.HDel(context.WithoutCancel(ctx), k.Out, field, "l:"+field).Err(); err != nil {
			return published, left, fmt.Errorf("control: clear outbox entry of %s: %w", room, err)
		}
		published++
		s.lg.Warn("control: published a record left in the outbox", zap.String("room", room), zap.String("entry", field))
	}
	return published, left, nil
}

// Run sweeps the outbox every Options.SweepInterval until ctx ends, and
// returns nil then. Every instance may run it: claims are atomic.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.opt.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.lg.Warn("control: outbox sweep", zap.Error(err))
		}
	}
}

// Sweep looks once at the index members older than the lease (writers that
// should have finished), publishes their rooms' entries left behind, and
// removes the members it may. It returns how many records it published.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	idx := outboxIndex(s.opt.Env)
	until := time.Now().Add(-s.opt.Lease).UnixMilli()
	members, err := s.rc.ZRangeByScore(ctx, idx, &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(until, 10), Count: 256,
	}).Result()
	if err != nil {
		return 0, fmt.Errorf("control: read outbox index: %w", err)
	}
	byRoom := map[string][]any{}
	var order []string
	for _, m := range members {
		room, _, _ := strings.Cut(m, "\n")
		if _, ok := byRoom[room]; !ok {
			order = append(order, room)
		}
		byRoom[room] = append(byRoom[room], m)
	}
	total := 0
	for _, room := range order {
		n, left, err := s.recover(ctx, room)
		total += n
		if err != nil {
			return total, err
		}
		if left > 0 {
			continue // a writer still holds an entry; look again next time
		}
		if err := s.rc.ZRem(ctx, idx, byRoom[room]...).Err(); err != nil {
			return total, fmt.Errorf("control: outbox index: %w", err)
		}
	}
	return total, nil
}
