package sink

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/internal/redisscript"
	"github.com/rostrumhq/rostrum/ranking"
)

// ErrRedisRolledBack is returned by Apply when a room holds a state token
// that this sink wrote before the one it wrote last for that room: Redis went
// back in time (a failover to a replica that missed writes, a restore from
// an older snapshot) while its generation marker stayed. It wraps
// ranking.ErrRedisReset, whose rebuild from the write-ahead log and the output topic
// restores what was lost (within the log's retention). The Apply that
// returned it ran fully; its effects are kept.
var ErrRedisRolledBack = fmt.Errorf("%w: a room went back to an older state this processor had written (failover or restored snapshot)", ranking.ErrRedisReset)

// generationKey holds a random id written once per Redis data set. Its loss
// is how a processor learns that Redis lost everything.
func generationKey(env string) string { return "rostrum:" + env + ":generation" }

// EnsureGeneration returns the current generation marker, creating one if
// Redis has none.
func (r *Store) EnsureGeneration(ctx context.Context) (string, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	k := generationKey(r.opt.Env)
	if err := r.c.SetNX(ctx, k, hex.EncodeToString(b[:]), 0).Err(); err != nil {
		return "", fmt.Errorf("sink: generation marker: %w", err)
	}
	g, err := r.c.Get(ctx, k).Result()
	if err != nil {
		return "", fmt.Errorf("sink: generation marker: %w", err)
	}
	return g, nil
}

// AdoptGeneration makes Apply expect generation g from now on.
func (r *Store) AdoptGeneration(g string) {
	r.gen.Store(&g)
}

// checkGeneration compares the marker read in a pipeline (generationLua:
// "" when missing) with the adopted one. Nothing adopted yet means nothing
// to compare.
func (r *Store) checkGeneration(c *redis.Cmd) error {
	want := r.gen.Load()
	if want == nil {
		return nil
	}
	got, err := c.Text()
	if err != nil {
		return fmt.Errorf("sink: generation marker: %w", err)
	}
	if got != *want {
		return ranking.ErrRedisReset
	}
	return nil
}

// RestoreStable seeds the stable lists of rooms that have none or an older
// seq (see restoreLua), in one pipelined round trip, and returns how many it
// seeded.
func (r *Store) RestoreStable(ctx context.Context, seeds []ranking.PublishedList) (int, error) {
	r.cache.clear() // recovery: the stable hashes change under the cache
	cmds, err := r.run(ctx, func(p *redisscript.Pipe) []*redis.Cmd {
		out := make([]*redis.Cmd, len(seeds))
		for i, s := range seeds {
			a := restoreArgs{seq: s.Seq, list: strings.Join(s.List, ","), ttl: r.ttlArg, state: s.State}
			out[i] = p.Run(ctx, restoreLua, []string{RoomKeys(r.opt.Env, s.Room).Stable}, a.append(nil)...)
		}
		return out
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range cmds {
		if v, _ := c.Int64(); v == 1 {
			n++
		}
	}
	return n, nil
}
