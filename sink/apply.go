package sink

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/internal/redisscript"
	"github.com/rostrumhq/rostrum/ranking"
)

// Apply writes the rooms' updates, each room atomically in a script guarded
// by its watermarks and state token, and clears the pending marks of acks.
// It returns one RoomState per room, in order. The first round trip peeks
// at the due set's earliest entry too (see PeekDue).
//
// Every room is planned in Go (see roomModel) and written by fastLua. A
// room whose member states the sink holds (see stateCache) is planned at
// once and costs one round trip; the others, and any room that another
// writer changed since, are read first (loadLua) and planned in the next
// round trip.
//
// Every round trip reads the generation marker after its room scripts (and
// again after any of them that ran again, see generationLua); when a read
// differs from the adopted marker, Apply returns ranking.ErrRedisReset (see
// there) and no state. A marker read before the scripts would vouch only
// for the data set as it was then: a script run after Redis came back empty
// (a later round trip, or a call run again after NOSCRIPT) would return a
// room with no stable list and seq 0, whose next list would be stored and
// published as seq 1 again before the rebuild seeded the seqs from the
// output topic.
func (r *Store) Apply(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack) ([]ranking.RoomState, error) {
	states, _, err := r.ApplyMerge(ctx, rooms, acks, nil)
	return states, err
}

// ApplyMerge is Apply, where the rooms whose plan can take the stable step
// (see roomModel.plan) are merged (merge is called with the state the
// apply will leave) and their updates stored by the apply's own script:
// one script per room instead of two. merged[i].Done tells which rooms. A
// merged update's Due is entered in the due set in the same round trip.
func (r *Store) ApplyMerge(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack, merge ranking.StableStep) (states []ranking.RoomState, merged []ranking.Merged, err error) {
	run := newApplyRun(rooms, acks, merge, false)
	if err := r.apply(ctx, run); err != nil {
		return nil, nil, err
	}
	return run.states, run.merged, nil
}

// Rebuild applies rooms' updates while rebuilding lost state: parts at or
// below a watermark are applied too (the batch in hand may already have
// raised a watermark past older batches that still need applying). Member
// registers merge idempotently, so re-applying is harmless for the meeting
// ranking. Watermarks only ever rise.
func (r *Store) Rebuild(ctx context.Context, rooms []ranking.RoomUpdate) error {
	r.forget(rooms)
	return r.apply(ctx, newApplyRun(rooms, nil, nil, true))
}

// maxTrips bounds an apply's round trips. A room takes at most two (read,
// then write) unless another writer changes it between the two, or the
// apply holds it more than once; past the bound, the apply fails and the
// processor tries the batch again.
const maxTrips = 8

// applyRun is one apply's progress over its round trips.
type applyRun struct {
	rooms []ranking.RoomUpdate
	acks  []ranking.Ack // not yet sent
	merge ranking.StableStep
	force bool // Rebuild: apply parts at or below their watermarks too

	states  []ranking.RoomState
	merged  []ranking.Merged
	done    []bool        // rooms applied
	left    int           // rooms not yet applied
	loaded  []*loadedRoom // rooms read by the last round trip, by index (nil: none)
	partial bool          // a room was read in part: its entry goes at the apply's end
}

func newApplyRun(rooms []ranking.RoomUpdate, acks []ranking.Ack, merge ranking.StableStep, force bool) *applyRun {
	return &applyRun{rooms: rooms, acks: acks, merge: merge, force: force,
		states: make([]ranking.RoomState, len(rooms)), merged: make([]ranking.Merged, len(rooms)),
		done: make([]bool, len(rooms)), left: len(rooms)}
}

// apply plans and writes run's rooms, a round trip at a time, until every
// room is applied: each trip writes the rooms it could plan and reads the
// others, which the next trip plans from what it read.
func (r *Store) apply(ctx context.Context, run *applyRun) error {
	defer func() {
		if run.partial {
			r.cache.dropPartial(run.rooms)
		}
		r.cache.trim()
	}()
	var rolledBack error
	for trip := 1; trip == 1 || run.left > 0; trip++ { // the first one also for acks alone
		if trip > maxTrips {
			return r.failed(run.rooms, fmt.Errorf("sink: apply: %d rooms changed by another writer on each of %d round trips", run.left, maxTrips))
		}
		plans, loads, acks, err := r.plan(run)
		if err != nil {
			return r.failed(run.rooms, err)
		}
		t, err := r.trip(ctx, run, plans, loads, acks, trip == 1)
		if err != nil {
			return r.failed(run.rooms, err)
		}
		rb, err := r.finishTrip(t, run, plans)
		if err != nil {
			return r.failed(run.rooms, err)
		}
		if rb != nil {
			// No stable list is stored from here on: the seqs of the rooms
			// Redis lost are behind what was published, and the rebuild
			// the caller runs seeds them from the output topic first.
			rolledBack, run.merge = rb, nil
		}
		// Redis may have lost its data since an earlier round trip: each
		// one reads the marker again, after its scripts, and every read
		// must pass.
		if err := r.checkGeneration(t.gen); err != nil {
			if errors.Is(err, ranking.ErrRedisReset) {
				r.cache.clear() // after a data loss the whole cache is stale
			}
			return r.failed(run.rooms, err)
		}
	}
	if rolledBack != nil {
		// The apply ran fully (the rooms concerned were read and planned
		// again); the caller rebuilds what Redis lost.
		r.cache.clear()
		return rolledBack
	}
	return nil
}

// failed drops the rooms' cache entries after a failed apply (what Redis
// holds for them is not known) and returns err.
func (r *Store) failed(rooms []ranking.RoomUpdate, err error) error {
	r.forget(rooms)
	return err
}

// applyTrip is one round trip of an apply: its room calls and the
// generation marker read after them.
type applyTrip struct {
	calls []roomCall
	gen   *redis.Cmd
}

// roomCall is one queued call of fastLua or loadLua and the rooms it
// holds, indices into the apply's rooms in the call's order.
type roomCall struct {
	cmd   *redis.Cmd
	load  bool
	rooms []int
}

// trip sends one round trip: on the first, a peek at the due set; the acks
// no planned room carries; the room calls, in the rooms' order (fastLua
// for the planned rooms, loadLua for the ones to read); the merged rooms'
// due entries; and, last, the generation marker's read. It records the
// acks sent and the due peek.
func (r *Store) trip(ctx context.Context, run *applyRun, plans []*fastPlan, loads [][]any, acks []ranking.Ack, first bool) (applyTrip, error) {
	var t applyTrip
	var due *redis.ZSliceCmd
	_, err := r.run(ctx, func(p *redisscript.Pipe) []*redis.Cmd {
		if first {
			due = p.ZRangeWithScores(ctx, dueKey(r.opt.Env), 0, 0)
		}
		r.queueAcks(ctx, p, acks)
		t.calls = r.queueRooms(ctx, p, run, plans, loads)
		out := make([]*redis.Cmd, len(t.calls))
		for i := range t.calls {
			out[i] = t.calls[i].cmd
		}
		for _, pl := range plans {
			if pl != nil && pl.update != nil && pl.update.Due > 0 {
				p.Do(ctx, "ZADD", dueKey(r.opt.Env), "LT", pl.update.Due, pl.update.Room)
			}
		}
		t.gen = r.readGeneration(ctx, p) // last: after every room script
		return out
	})
	if err != nil {
		return t, err
	}
	for i := range acks {
		r.cache.acked(&acks[i])
	}
	if due != nil {
		if zs, err := due.Result(); err == nil {
			peek := &ranking.DuePeek{Seen: time.Now()}
			if len(zs) > 0 {
				peek.At = int64(zs[0].Score)
			}
			r.due.Store(peek)
		}
	}
	return t, nil
}

// finishTrip reads a round trip's replies: the planned rooms' into
// run.states and run.merged (a room whose plan was refused is read in the
// next trip, and its ack goes back to run.acks), the read rooms' into
// run.loaded. It returns ErrRedisRolledBack when a room showed that Redis
// went back in time (the apply still completes).
func (r *Store) finishTrip(t applyTrip, run *applyRun, plans []*fastPlan) (rolledBack, err error) {
	run.loaded = nil
	for _, c := range t.calls {
		replies, err := c.replies()
		if err != nil {
			return nil, fmt.Errorf("sink: apply rooms: %w", err)
		}
		for j, i := range c.rooms {
			u := &run.rooms[i]
			if c.load {
				if run.loaded == nil {
					run.loaded = make([]*loadedRoom, len(run.rooms))
				}
				if run.loaded[i], err = r.parseLoad(replies[j], u); err != nil {
					return nil, err
				}
				run.partial = run.partial || run.loaded[i].cr.partial
				continue
			}
			pl := plans[i]
			ok, err := r.finishFast(replies[j], u, pl, &run.states[i])
			if errors.Is(err, ErrRedisRolledBack) {
				rolledBack, err = err, nil
			}
			if err != nil {
				return nil, err
			}
			if !ok {
				if pl.ack != nil {
					run.acks = append(run.acks, *pl.ack)
				}
				continue
			}
			if pl.merged != nil {
				run.merged[i] = ranking.Merged{Done: true, Update: pl.update}
			}
			run.done[i] = true
			run.left--
		}
	}
	return rolledBack, nil
}

// queueAcks queues ackLua for acks on p, up to Config.RoomsPerScript
// rooms per call.
func (r *Store) queueAcks(ctx context.Context, p *redisscript.Pipe, acks []ranking.Ack) {
	per := r.opt.RoomsPerScript
	keys := make([]string, len(acks))
	for i := range acks {
		keys[i] = RoomKeys(r.opt.Env, acks[i].Room).Stable
	}
	args := (&ackArgs{acks: acks}).append(make([]any, 0, len(acks)))
	for a := 0; a < len(acks); a += per {
		b := min(a+per, len(acks))
		p.Run(ctx, ackLua, keys[a:b:b], args[a:b:b]...)
	}
}

// readGeneration queues the read of the generation marker in p. Queued
// after the room scripts of a round trip, it reads the data set they ran on,
// or a later one; redisscript runs it again after any call it runs again.
func (r *Store) readGeneration(ctx context.Context, p *redisscript.Pipe) *redis.Cmd {
	return p.RunCheck(ctx, generationLua, []string{generationKey(r.opt.Env)})
}

// forget drops rooms from the state cache after a failed apply: what Redis
// holds for them is not known.
func (r *Store) forget(rooms []ranking.RoomUpdate) {
	names := make([]string, len(rooms))
	for i := range rooms {
		names[i] = rooms[i].Room
	}
	r.cache.drop(names...)
}

// Read returns the rooms' stable and raw top lists without changing them
// (but for a room scored under other rules, whose ranking it makes again
// under the Store's, as any write would).
func (r *Store) Read(ctx context.Context, rooms []string) ([]ranking.RoomState, error) {
	ups := make([]ranking.RoomUpdate, len(rooms))
	for i, room := range rooms {
		ups[i].Room = room
	}
	return r.Apply(ctx, ups, nil)
}

// partName names a topic-partition: its watermark's field in the stable
// hash.
func partName(p *ranking.Part) string { return p.Topic + "/" + strconv.Itoa(int(p.Partition)) }
