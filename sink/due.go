package sink

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/internal/redisscript"
	"github.com/rostrumhq/rostrum/ranking"
)

// The due set lets any processor of the group find the rooms whose
// hysteresis must be stepped without new events (a challenger's dwell or a
// shown member's grace ends), also after a restart or a rebalance: it lives
// in Redis, not in a processor. It is a sorted set per environment, room id →
// deadline (Unix ms, on the rooms' event clock).
//
// Its entries obey one rule: a room whose stored hysteresis state has a
// deadline D has an entry at D or earlier. Writers keep it so:
//
//   - StoreStable enters the new state's deadline with ZADD LT, after the
//     room's compare-and-set in the same pipeline (an entry only moves
//     earlier; a failed compare-and-set leaves at worst an early entry).
//   - A processor that stepped a due room moves its entry from the deadline
//     it read to the deadline of the state it stored, or removes it
//     (SettleDue: only if the entry is still the one it read), then reads the
//     rooms' states again (DueStates) and enters their deadlines once more
//     (ArmDue). A state stored by someone else between its read and its
//     settle is seen by that second read, and one stored after it enters its
//     own deadline after the settle: the rule holds without a transaction
//     across hash slots.
//
// An early or stale entry costs one step that changes nothing.

// PeekDue returns what the last Apply saw of the due set, and false before
// any Apply. While batches flow, it spares the timer a round trip of its
// own to learn that nothing is due yet.
func (r *Store) PeekDue() (ranking.DuePeek, bool) {
	p := r.due.Load()
	if p == nil {
		return ranking.DuePeek{}, false
	}
	return *p, true
}

// DueRooms returns up to max rooms whose deadline is at or before until
// (Unix ms), earliest first.
func (r *Store) DueRooms(ctx context.Context, until int64, max int) ([]ranking.DueRoom, error) {
	zs, err := r.c.ZRangeByScoreWithScores(ctx, dueKey(r.opt.Env), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(until, 10), Count: int64(max),
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("sink: read due rooms: %w", err)
	}
	out := make([]ranking.DueRoom, len(zs))
	for i, z := range zs {
		room, _ := z.Member.(string)
		out[i] = ranking.DueRoom{Room: room, At: int64(z.Score)}
	}
	return out, nil
}

// SettleDue moves the entries of rooms, read at rooms[i].At, to next[i]
// (0: removes them), each only if it is still at the time read (settleLua);
// one pipelined round trip.
func (r *Store) SettleDue(ctx context.Context, rooms []ranking.DueRoom, next []int64) error {
	key := []string{dueKey(r.opt.Env)}
	_, err := r.run(ctx, func(p *redisscript.Pipe) []*redis.Cmd {
		out := make([]*redis.Cmd, len(rooms))
		for i, d := range rooms {
			a := settleArgs{room: d.Room, at: d.At, next: next[i]}
			out[i] = p.Run(ctx, settleLua, key, a.append(nil)...)
		}
		return out
	})
	return err
}

// DueStates returns the stored hysteresis states of rooms ("" for none),
// one pipelined round trip.
func (r *Store) DueStates(ctx context.Context, rooms []string) ([]string, error) {
	p := r.c.Pipeline()
	cmds := make([]*redis.StringCmd, len(rooms))
	for i, room := range rooms {
		cmds[i] = p.HGet(ctx, RoomKeys(r.opt.Env, room).Stable, fieldHState)
	}
	if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("sink: read hysteresis states: %w", err)
	}
	out := make([]string, len(rooms))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// ArmDue enters the rooms at their deadlines in the due set, moving existing
// entries only earlier (ZADD LT); one round trip.
func (r *Store) ArmDue(ctx context.Context, rooms []ranking.DueRoom) error {
	if len(rooms) == 0 {
		return nil
	}
	p := r.c.Pipeline()
	for _, d := range rooms {
		p.ZAddLT(ctx, dueKey(r.opt.Env), redis.Z{Score: float64(d.At), Member: d.Room})
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("sink: arm due rooms: %w", err)
	}
	return nil
}
