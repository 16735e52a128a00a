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
//     (Config.Lease) that keeps it the writer's to publish;
//  3. produces the record and waits for Kafka's acknowledgement (at most
//     Config.ProduceTimeout, shorter than the lease);
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
// A record is produced once, also across a crash. Its writer, alone within
// the lease, produces it and deletes it. A writer can die (or lose Redis)
// after Kafka acknowledged the record and before the delete, and a Redis
// restart can lose a delete it did not fsync: the entry then outlives its
// record's publication. So a recovery, before it publishes an entry, asks
// Config.Lookup whether the topic already holds the record (same key, same
// bytes, so same token or version) among the records stamped at or after
// the record's "at" less lookBack, and deletes the entry without publishing
// it if so. The record's timestamp is its publisher's clock when it
// produced it (or, on a topic with LogAppendTime, the broker's), which is
// after the step's "at" on the Redis primary's clock: lookBack is how far
// those clocks may be behind Redis's.
//
// That leaves one race: the writer's own produce landing after the
// recovery's lookup. A publisher (writer or recovery) begins a produce only
// while ProduceTimeout and landing() are left of its lease (publish), its
// client fails a record not yet sent when ProduceTimeout ends
// (kgo.RecordDeliveryTimeout), and a request already sent is answered
// within the same time (kgo.ProduceRequestTimeout); a recovery claims an
// entry only after the lease. So a record sent by a publisher that died or
// gave up is on the topic, or never will be, before anyone looks, provided
// the broker appends it, and makes it visible, within landing() of the
// send (half of Lease − ProduceTimeout, 10s by default).
//
// A live publisher whose request got no answer in time is another matter:
// franz-go's idempotent producer never fails a record whose fate it does
// not know (to keep sequence numbers valid) and retries it, after the
// connection's deadline, for as long as the process lives. Such a publisher
// answers at ProduceTimeout but keeps renewing the entry's lease (publish,
// hold) until the produce resolves, so no recovery looks before the record
// has landed or failed for good. Only a publisher stalled past the rest of
// its lease between two renewals can still see its record published twice;
// consumers keep dropping tokens they have acted on (docs/DESIGN.md §12).

// lookBack is how far before a record's "at" a recovery's lookup starts.
const lookBack = time.Minute

// recover claims room's outbox entries whose lease has ended, publishes
// those not yet on their topic, and deletes them. It returns how many it
// published and how many entries are still leased to others.
func (s *Service) recover(ctx context.Context, room string) (published, left int, err error) {
	k := roomKeys(s.opt.Env, room)
	leased := time.Now() // no later than the claim that takes the lease
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
		topic := s.topicOf(field)
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opt.ProduceTimeout)
		there, err := s.lk.Contains(lctx, topic, []byte(room), []byte(record), stampOf(record).Add(-lookBack))
		cancel()
		if err != nil {
			return published, left, fmt.Errorf("control: look up outbox entry %s of %s: %w", field, room, err)
		}
		if !there {
			if err := s.publish(ctx, leased, entry{k.Out, field}, topic, room, record); err != nil {
				return published, left, err
			}
		}
		if err := s.rc.HDel(context.WithoutCancel(ctx), k.Out, field, "l:"+field).Err(); err != nil {
			return published, left, fmt.Errorf("control: clear outbox entry of %s: %w", room, err)
		}
		if there {
			s.lg.Warn("control: dropped an outbox entry already on its topic", zap.String("room", room), zap.String("entry", field))
			continue
		}
		published++
		s.lg.Warn("control: published a record left in the outbox", zap.String("room", room), zap.String("entry", field))
	}
	return published, left, nil
}

// recoverFor runs recover for a request whose script reported entries of
// room with an ended lease. A failure is logged, not answered: the request
// itself succeeded, and a later request or sweep tries again.
func (s *Service) recoverFor(ctx context.Context, room string) {
	if _, _, err := s.recover(ctx, room); err != nil && ctx.Err() == nil {
		s.lg.Warn("control: outbox recovery", zap.String("room", room), zap.Error(err))
	}
}

// Run sweeps the outbox every Config.SweepInterval until ctx ends, and
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
