package board

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/internal/glob"
)

// Orphans returns, by board name, the Redis keys of env's boards that are
// not among keep: boards removed from the configuration. Nothing else ever
// deletes them, since only a configured board's Apply and Expire touch its
// keys. It scans every master of a cluster.
func Orphans(ctx context.Context, rdb redis.UniversalClient, env string, keep []*boarddef.Board) (map[string][]string, error) {
	kept := make(map[string]bool, len(keep))
	for _, b := range keep {
		kept[b.Name()] = true
	}
	prefix := "rostrum:" + env + ":board:{"
	pattern := glob.Escape(prefix) + "*"
	var mu sync.Mutex
	out := map[string][]string{}
	scan := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			tag, _, ok := strings.Cut(strings.TrimPrefix(key, prefix), "}:")
			name, _, _ := strings.Cut(tag, "@") // a period's: {name@label}
			if !ok || kept[name] {
				continue
			}
			mu.Lock()
			out[name] = append(out[name], key)
			mu.Unlock()
		}
		return iter.Err()
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, rdb)
	}
	if err != nil {
		return nil, fmt.Errorf("board: scan for removed boards: %w", err)
	}
	for _, keys := range out {
		sort.Strings(keys)
	}
	return out, nil
}

// DeleteKeys removes the keys Orphans found (UNLINK, so Redis frees them in
// the background). One command holds keys of one cluster slot: a board's
// keys share its hash tag, except the periods of a periodic board, each
// under a tag of its own.
func DeleteKeys(ctx context.Context, rdb redis.UniversalClient, orphans map[string][]string) (int64, error) {
	var n int64
	for name, all := range orphans {
		bySlot := map[int][]string{}
		var slots []int
		for _, k := range all {
			sl := keySlot(k)
			if _, ok := bySlot[sl]; !ok {
				slots = append(slots, sl)
			}
			bySlot[sl] = append(bySlot[sl], k)
		}
		for _, sl := range slots {
			if err := unlink(ctx, rdb, name, bySlot[sl], &n); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// unlink removes keys of one slot, 500 per command, adding the number
// removed to n.
func unlink(ctx context.Context, rdb redis.UniversalClient, name string, keys []string, n *int64) error {
	for len(keys) > 0 {
		batch := keys[:min(len(keys), 500)]
		d, err := rdb.Unlink(ctx, batch...).Result()
		if err != nil {
			return fmt.Errorf("board %s: delete keys: %w", name, err)
		}
		*n += d
		keys = keys[len(batch):]
	}
	return nil
}
