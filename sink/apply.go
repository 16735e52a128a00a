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
// by its watermarks, and clears the pending marks of acks, all in one
// pipelined round trip. It returns one RoomState per room, in order. The
// same round trip peeks at the due set's earliest entry (see PeekDue).
//
// A room whose member states the sink holds (see stateCache) is merged and
// scored here and written by the small fastLua; the others, and any room
// that another writer changed since, take applyLua, whose reply refills the
// cache. Only a room another writer changed costs a second round trip.
//
// The same round trip reads the generation marker after the room scripts
// (and again after any of them that ran again, see generationLua), and so
// does the second round trip: when a marker read differs from the adopted
// one, Apply returns ranking.ErrRedisReset (see there) and no state. A
// marker read before the scripts would vouch only for the data set as it
// was then: a script run after Redis came back empty (the second round trip,
// or a call run again after NOSCRIPT) would return a room with no stable
// list and seq 0, whose next list would be stored and published as seq 1
// again before the rebuild seeded the seqs from the output topic.
func (r *Store) Apply(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack) ([]ranking.RoomState, error) {
	states, _, err := r.ApplyMerge(ctx, rooms, acks, nil)
	return states, err
}

// ApplyMerge is Apply, where rooms whose stable hash the state cache also
// knows are merged (merge is called with the state the apply will leave)
// and their updates stored by the apply's own script: one round trip and
// one script per room instead of two. merged[i].Done tells which rooms.
// A merged update's Due is entered in the due set in the same round trip.
func (r *Store) ApplyMerge(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack, merge ranking.StableStep) (states []ranking.RoomState, merged []ranking.Merged, err error) {
	var plans []*fastPlan
	if r.cache != nil {
		if plans, acks, err = r.plan(rooms, acks, merge); err != nil {
			r.forget(rooms)
			return nil, nil, err
		}
	}
	t, err := r.firstTrip(ctx, rooms, plans, acks)
	if err != nil {
		r.forget(rooms)
		return nil, nil, err
	}
	states = make([]ranking.RoomState, len(rooms))
	merged = make([]ranking.Merged, len(rooms))
	again, rolledBack, err := r.finishTrip(t, rooms, plans, states, merged)
	if err != nil {
		r.forget(rooms)
		return nil, nil, err
	}
	gen := t.gen
	if len(again) > 0 {
		// Redis may have lost its data since the first round trip: this
		// one reads the marker again, after its scripts, and both reads
		// must pass.
		if err := r.checkGeneration(gen); err != nil {
			return nil, nil, r.resetFailed(rooms, err)
		}
		if gen, err = r.applyAgain(ctx, rooms, plans, again, states); err != nil {
			r.forget(rooms)
			return nil, nil, err
		}
	}
	if err := r.checkGeneration(gen); err != nil {
		return nil, nil, r.resetFailed(rooms, err)
	}
	if rolledBack != nil {
		// The apply ran fully (the rooms concerned took the full script);
		// the caller rebuilds what Redis lost.
		r.cache.clear()
		return nil, nil, rolledBack
	}
	return states, merged, nil
}

// applyTrip is an apply's first round trip: the calls queued for its rooms
// and the generation marker read after them.
type applyTrip struct {
	fast []fastCall
	full []*redis.Cmd // the full script's call of each room that takes it, or nil
	gen  *redis.Cmd
}

// firstTrip sends the apply's first round trip: a peek at the due set, the
// acks no planned room carries, every room's script (fastLua for the
// planned ones), the merged rooms' due entries and, last, the generation
// marker's read. It records the acks sent and the due peek.
func (r *Store) firstTrip(ctx context.Context, rooms []ranking.RoomUpdate, plans []*fastPlan, acks []ranking.Ack) (applyTrip, error) {
	var t applyTrip
	var due *redis.ZSliceCmd
	_, err := r.run(ctx, func(p *redisscript.Pipe) []*redis.Cmd {
		due = p.ZRangeWithScores(ctx, dueKey(r.opt.Env), 0, 0)
		r.queueAcks(ctx, p, acks)
		t.fast, t.full = r.queueRooms(ctx, p, rooms, plans)
		var out []*redis.Cmd
		for _, c := range t.full {
			if c != nil {
				out = append(out, c)
			}
		}
		for _, fc := range t.fast {
			out = append(out, fc.cmd)
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
	if r.cache != nil {
		for i := range acks {
			r.cache.acked(&acks[i])
		}
	}
	if zs, err := due.Result(); err == nil {
		peek := &ranking.DuePeek{Seen: time.Now()}
		if len(zs) > 0 {
			peek.At = int64(zs[0].Score)
		}
		r.due.Store(peek)
	}
	return t, nil
}

// finishTrip reads the first round trip's replies into states and merged.
// It returns the rooms whose fastLua was refused (they take the full
// script in a second round trip) and ErrRedisRolledBack when a room showed
// that Redis went back in time (the apply still completes).
func (r *Store) finishTrip(t applyTrip, rooms []ranking.RoomUpdate, plans []*fastPlan, states []ranking.RoomState, merged []ranking.Merged) (again []int, rolledBack, err error) {
	for _, fc := range t.fast {
		replies, err := fc.replies()
		if err != nil {
			return nil, nil, fmt.Errorf("sink: apply rooms: %w", err)
		}
		for j, i := range fc.rooms {
			ok, err := r.finishFast(replies[j], &rooms[i], plans[i], &states[i])
			if errors.Is(err, ErrRedisRolledBack) {
				rolledBack, err = err, nil
			}
			if err != nil {
				return nil, nil, err
			}
			if !ok {
				again = append(again, i)
			} else if plans[i].merged != nil {
				merged[i] = ranking.Merged{Done: true, Update: plans[i].update}
			}
		}
	}
	for i, c := range t.full {
		if c == nil {
			continue
		}
		if err := r.finishFull(c, rooms[i].Room, &states[i]); err != nil {
			return nil, nil, err
		}
	}
	return again, rolledBack, nil
}

// applyAgain applies the rooms again (indices into rooms) with the full
// script, with the acks their fastLua would have run, and returns the
// generation marker's read after them.
func (r *Store) applyAgain(ctx context.Context, rooms []ranking.RoomUpdate, plans []*fastPlan, again []int, states []ranking.RoomState) (*redis.Cmd, error) {
	var gen *redis.Cmd
	cmds, err := r.run(ctx, func(p *redisscript.Pipe) []*redis.Cmd {
		var acks []ranking.Ack
		for _, i := range again {
			if a := plans[i].ack; a != nil {
				acks = append(acks, *a)
			}
		}
		r.queueAcks(ctx, p, acks)
		out := make([]*redis.Cmd, len(again))
		for j, i := range again {
			out[j] = r.applyRoom(ctx, p, &rooms[i], false)
		}
		gen = r.readGeneration(ctx, p)
		return out
	})
	if err != nil {
		return nil, err
	}
	for j, i := range again {
		if err := r.finishFull(cmds[j], rooms[i].Room, &states[i]); err != nil {
			return nil, err
		}
	}
	return gen, nil
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

// resetFailed handles a failed generation check: after a data loss the
// whole cache is stale; after another failure the rooms' entries are.
func (r *Store) resetFailed(rooms []ranking.RoomUpdate, err error) error {
	if r.cache != nil && errors.Is(err, ranking.ErrRedisReset) {
		r.cache.clear()
	} else {
		r.forget(rooms)
	}
	return err
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
	if r.cache == nil {
		return
	}
	names := make([]string, len(rooms))
	for i := range rooms {
		names[i] = rooms[i].Room
	}
	r.cache.drop(names...)
}

// finishFull reads applyLua's reply into st and refills the cache from it.
func (r *Store) finishFull(c *redis.Cmd, room string, st *ranking.RoomState) error {
	token, pairs, err := parseRoomState(c, room, st)
	if err != nil {
		return err
	}
	if r.cache == nil {
		return nil
	}
	r.cache.full.Add(1)
	if token == "" {
		r.cache.drop(room)
		return nil
	}
	return r.cache.put(room, token, pairs, st, r.opt.Meeting)
}

// Read returns the rooms' stable and raw top lists without changing them.
func (r *Store) Read(ctx context.Context, rooms []string) ([]ranking.RoomState, error) {
	ups := make([]ranking.RoomUpdate, len(rooms))
	for i, room := range rooms {
		ups[i].Room = room
	}
	return r.Apply(ctx, ups, nil)
}

// Rebuild applies rooms' updates while rebuilding lost state: parts at or
// below a watermark are applied too (the batch in hand may already have
// raised a watermark past older batches that still need applying). Member
// registers merge idempotently, so re-applying is harmless for the meeting
// ranking. Watermarks only ever rise.
func (r *Store) Rebuild(ctx context.Context, rooms []ranking.RoomUpdate) error {
	r.forget(rooms)
	_, err := r.run(ctx, func(p *redisscript.Pipe) []*redis.Cmd {
		out := make([]*redis.Cmd, len(rooms))
		for i := range rooms {
			out[i] = r.applyRoom(ctx, p, &rooms[i], true)
		}
		return out
	})
	return err
}

// applyRoom queues applyLua for the room's update; force applies its parts
// at or below their watermarks too.
func (r *Store) applyRoom(ctx context.Context, p *redisscript.Pipe, u *ranking.RoomUpdate, force bool) *redis.Cmd {
	k := RoomKeys(r.opt.Env, u.Room)
	a := applyRoomArgs{force: force, parts: u.Parts}
	if r.cache != nil {
		a.token, a.want = r.cache.token(), !force
	}
	args := append(make([]any, 0, len(r.applyHead)+applyRoomBound(u)), r.applyHead...)
	return p.Run(ctx, applyLua, []string{k.Members, k.Ranking, k.Stable}, a.append(args)...)
}

// partName names a topic-partition: its watermark's field in the stable
// hash.
func partName(p *ranking.Part) string { return p.Topic + "/" + strconv.Itoa(int(p.Partition)) }
