package board

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/internal/glob"
)

// Moving a periodic board from one hash tag per board (the layout of
// earlier versions, hash-tag: board) to one per period (docs/DESIGN.md §8
// "Boards over a Redis Cluster"); rostrum boards migrate.

// MigrateResult is what Migrate did.
type MigrateResult struct {
	Boards  int // boards moved
	Periods int // periods written in the new layout
	Keys    int // keys copied (DUMP and RESTORE)
	Deleted int // keys of the old layout deleted
}

// Migrate moves every hash-tag: period board of the store whose keys are in
// the one-tag layout into one hash tag per period, with the processors
// stopped. For each such board (its "w" hash holds applied ranges):
//
//  1. each period's keys (ranking, member states, event ids, settled
//     snapshot and its info) are copied under the period's tag with
//     DUMP and RESTORE (REPLACE, keeping their expiry), which works
//     across the slots of a cluster;
//  2. every period found, and every period of the retention before now,
//     gets the board's applied ranges and generation in its own "w" (the
//     board applied those offsets to all its periods, so a redelivered
//     record is skipped in each), is registered, and, at or below the
//     board's frozen mark, is marked frozen (its events stay late);
//  3. the old keys are deleted, and last the applied ranges are removed
//     from the board's "w": until then the board is still in the old
//     layout (Adopt refuses it), so an interrupted migration is finished
//     by running it again, every step being idempotent.
//
// The board's counters stay in its "n" hash (a hash-tag: period board
// counts per period from then on). A board whose settlement is copying a
// period (its settle state is busy) is refused: let the processors of the
// earlier version finish it, then migrate.
func (s *Store) Migrate(ctx context.Context, now time.Time) (MigrateResult, error) {
	var res MigrateResult
	for _, b := range s.boards {
		if !b.spread {
			continue
		}
		if err := s.migrateBoard(ctx, b, now, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

func (s *Store) migrateBoard(ctx context.Context, b *Board, now time.Time, res *MigrateResult) error {
	P := s.prefix(b)
	w, err := s.rdb.HGetAll(ctx, P+"w").Result()
	if err != nil {
		return fmt.Errorf("board %s: migrate: %w", b.name, err)
	}
	var fields []string
	ranges := map[string]any{}
	for f, v := range w {
		if f != "gen" {
			fields = append(fields, f)
			ranges[f] = v
		}
	}
	if len(fields) == 0 {
		return nil // in the new layout already, or never written
	}
	st, err := s.rdb.HGetAll(ctx, P+"st").Result()
	if err != nil {
		return fmt.Errorf("board %s: migrate: %w", b.name, err)
	}
	if st["busy"] != "" {
		return fmt.Errorf("board %s: migrate: the settlement of %s is in progress; let the processors of the earlier version finish it, then migrate again", b.name, st["busy"])
	}
	frozen := st["frozen"]
	if w["gen"] != "" {
		ranges["gen"] = w["gen"]
	}

	old, err := scanAll(ctx, s.rdb, glob.Escape(P+"p:")+"*")
	if err != nil {
		return fmt.Errorf("board %s: migrate: %w", b.name, err)
	}
	snaps, err := scanAll(ctx, s.rdb, glob.Escape(P+"S:")+"*")
	if err != nil {
		return fmt.Errorf("board %s: migrate: %w", b.name, err)
	}
	labels := map[string]bool{}
	type move struct{ from, to string }
	var moves []move
	for _, k := range old {
		rest := strings.TrimPrefix(k, P+"p:")
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			continue
		}
		label, part := rest[:i], rest[i+1:]
		if _, err := b.ParsePeriod(label); err != nil {
			continue
		}
		labels[label] = true
		moves = append(moves, move{k, s.periodKey(b, label, part)})
	}
	for _, k := range snaps {
		rest := strings.TrimPrefix(k, P+"S:")
		label, info := strings.CutSuffix(rest, ":i")
		if strings.HasSuffix(rest, ":j") {
			continue // a record being copied: not while no settlement is busy
		}
		if _, err := b.ParsePeriod(label); err != nil {
			continue
		}
		labels[label] = true
		to := s.snapKey(b, label)
		if info {
			to += ":i"
		}
		moves = append(moves, move{k, to})
	}
	// The periods of the retention before now get the ranges too: a
	// redelivered record of a period whose keys are all gone (every
	// member removed) must not count again.
	p := b.Period(now)
	for range b.retention + 1 {
		labels[p.Label] = true
		p = b.Period(p.Start.Add(-time.Millisecond))
	}

	for _, mv := range moves {
		data, err := s.rdb.Dump(ctx, mv.from).Result()
		if err == redis.Nil {
			continue
		}
		if err != nil {
			return fmt.Errorf("board %s: migrate %s: %w", b.name, mv.from, err)
		}
		ttl, err := s.rdb.PTTL(ctx, mv.from).Result()
		if err != nil {
			return fmt.Errorf("board %s: migrate %s: %w", b.name, mv.from, err)
		}
		if ttl < 0 {
			ttl = 0 // no expiry
		}
		if err := s.rdb.RestoreReplace(ctx, mv.to, ttl, data).Err(); err != nil {
			return fmt.Errorf("board %s: migrate %s to %s: %w", b.name, mv.from, mv.to, err)
		}
		res.Keys++
	}
	sorted := make([]string, 0, len(labels))
	for l := range labels {
		sorted = append(sorted, l)
	}
	sort.Strings(sorted)
	pp := s.rdb.Pipeline()
	for _, l := range sorted {
		per, _ := b.ParsePeriod(l)
		exp := b.slotExpireAt(b.expireAt(per).UnixMilli(), per.End.UnixMilli())
		Q := s.periodPrefix(b, l)
		pp.HSet(ctx, Q+"w", ranges)
		pp.PExpireAt(ctx, Q+"w", time.UnixMilli(exp))
		if frozen != "" && l <= frozen {
			pp.HSet(ctx, Q+"st", "frozen", l)
			pp.PExpireAt(ctx, Q+"st", time.UnixMilli(exp))
		}
		pp.ZAddNX(ctx, s.registryKey(), redis.Z{Score: float64(exp), Member: registryMember(b, l)})
	}
	if _, err := pp.Exec(ctx); err != nil {
		return fmt.Errorf("board %s: migrate: write the periods: %w", b.name, err)
	}
	res.Periods += len(sorted)
	for _, mv := range moves {
		n, err := s.rdb.Unlink(ctx, mv.from).Result()
		if err != nil {
			return fmt.Errorf("board %s: migrate: delete %s: %w", b.name, mv.from, err)
		}
		res.Deleted += int(n)
	}
	if err := s.rdb.HDel(ctx, P+"w", fields...).Err(); err != nil {
		return fmt.Errorf("board %s: migrate: %w", b.name, err)
	}
	res.Boards++
	return nil
}

// scanAll returns the keys matching pattern on every master.
func scanAll(ctx context.Context, rdb redis.UniversalClient, pattern string) ([]string, error) {
	var mu sync.Mutex
	var out []string
	scan := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			out = append(out, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		if err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) }); err != nil {
			return nil, err
		}
	} else if err := scan(ctx, rdb); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}
