package sink

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/internal/redisscript"
	"github.com/rostrumhq/rostrum/ranking"
)

// StoreStable stores the lists in one pipelined round trip. stored[i] is false
// when room i's seq, ranking or hysteresis state moved on since it was read
// (another processor stored a list or changed the ranking first); the caller
// reads the room again and merges anew.
//
// The same round trip enters each update's Due time in the environment's
// due set (ZADD LT: an entry only ever moves earlier here). That key is in
// another hash slot than the room, so it is a command of its own, run even
// when the compare-and-set fails: an entry too early only costs one step
// that changes nothing, while a missing one would leave a decision waiting
// for the room's next event.
func (r *Store) StoreStable(ctx context.Context, ups []ranking.StableUpdate) (stored []bool, err error) {
	due := dueKey(r.opt.Env)
	defer func() {
		if err != nil { // not known which updates were stored
			for i := range ups {
				r.cache.stored(&ups[i], false)
			}
		}
	}()
	cmds, err := r.run(ctx, func(p *redisscript.Pipe) []*redis.Cmd {
		out := make([]*redis.Cmd, len(ups), 2*len(ups))
		for i, u := range ups {
			a := commitArgs{seq: u.PrevSeq, version: u.Version, list: strings.Join(u.List, ","), out: u.Out, ttl: r.ttlArg,
				prevState: u.PrevState, state: u.State, withList: !u.StateOnly}
			out[i] = p.Run(ctx, commitLua, []string{RoomKeys(r.opt.Env, u.Room).Stable}, a.append(nil)...)
		}
		for _, u := range ups {
			if u.Due > 0 {
				out = append(out, p.Do(ctx, "ZADD", due, "LT", u.Due, u.Room))
			}
		}
		return out
	})
	if err != nil {
		return nil, err
	}
	stored = make([]bool, len(ups))
	for i, c := range cmds[:len(ups)] {
		n, err := c.Int64()
		if err != nil {
			return nil, fmt.Errorf("sink: store stable list of %q: %w", ups[i].Room, err)
		}
		stored[i] = n == 1
		r.cache.stored(&ups[i], stored[i])
	}
	return stored, nil
}
