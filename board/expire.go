package board

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/redisscript"
)

// ExpireResult is what Expire did.
type ExpireResult struct {
	Subtracted int // (slice, window) subtractions
	Removed    int // members removed from a window whose total reached 0
	Deleted    int // slices deleted (no window needs them any more)
	Rebased    int // sums rewritten by decay boards' rebases: members, and a rolling board's slice sums (decay.go)
}

// Expire subtracts, for every rolling and windows board, each slice that has
// left a window by now (grace included) from that window, each board in one
// atomic script that also records the last subtracted slice, so a crash
// never subtracts twice or skips one, and several processors may call it at
// once. It works without events arriving; the processor calls it on a
// ticker. All boards go in one pipelined round trip.
//
// It also moves each decay board's base to its target at now (rebase.lua),
// so that it follows the clock while no event arrives; a rolling decay
// board's first, then its expiry (each keeps its window sums the sums of
// its slices, so either order is exact).
func (s *Store) Expire(ctx context.Context, now time.Time) (ExpireResult, error) {
	var res ExpireResult
	var rolling, decay []*boarddef.Board
	for _, b := range s.boards {
		if b.HalfLife() > 0 {
			decay = append(decay, b)
		}
		if b.Kind() == boarddef.Rolling || b.Kind() == boarddef.Windows {
			rolling = append(rolling, b)
		}
	}
	if len(decay) > 0 {
		n, err := s.rebase(ctx, decay, now)
		res.Rebased = n
		if err != nil {
			return res, err
		}
	}
	if len(rolling) == 0 {
		return res, nil
	}
	// The slices an expiry subtracts and deletes are read first, so that
	// the script can declare their keys (see applyKeys for why); a script
	// that finds it needs a slice it was not given (another processor
	// expired or a late event added one meanwhile) changes nothing and
	// answers -1, and the board is tried again with a fresh read.
	for attempt := 0; len(rolling) > 0; attempt++ {
		if attempt == 5 {
			return res, fmt.Errorf("board %s: expire: the slices kept changing", rolling[0].Name())
		}
		slices, err := s.expirePlan(ctx, rolling, now)
		if err != nil {
			return res, err
		}
		cmds, err := s.evalEach(ctx, len(rolling), func(k int) (*redisscript.Script, []string, []any) {
			b := rolling[k]
			P := s.prefix(b)
			if b.Kind() == boarddef.Windows {
				keys, args := s.expireWindowsCall(b, now, slices[k])
				return expireWindowsLua, keys, args
			}
			keys := []string{P + "x", P + "m", P + "n"}
			for _, q := range sliceSets(b) {
				keys = append(keys, sliceSetKey(P, q))
			}
			for j := range b.NumWindows() {
				keys = append(keys, windowKey(P, j))
			}
			a := expireArgs{prefix: P, tie: b.FirstReached(), rb: b.ReachedBits(), res: b.TieResolution().Milliseconds(), maxTotal: b.MaxTotal(),
				origin: b.Epoch().UnixMilli(), windows: windowsArg(b), floor: floorArg(b), neg: b.AllowNegative(),
				slice: b.Slice().Milliseconds(), through: expiredThrough(b, now)}
			// A decay board ranks its sums as they are, below 2^53, and
			// keeps a member's state while its newest slice is held, as
			// with negative values: a rebase may floor a sum to 0 while
			// the member's events are still in the window.
			if b.HalfLife() > 0 {
				a.maxTotal, a.neg = codec.MaxAmount, true
			}
			for _, sk := range slices[k] {
				keys = append(keys, sk, sk+":i")
				a.slices = append(a.slices, strings.TrimPrefix(sk, P))
			}
			return expireLua, keys, a.append(nil)
		})
		if err != nil {
			return res, err
		}
		var again []*boarddef.Board
		for k, c := range cmds {
			v, err := c.Int64Slice()
			if err != nil || len(v) != 3 {
				return res, fmt.Errorf("board %s: expire: %v %w", rolling[k].Name(), v, err)
			}
			if v[0] < 0 {
				again = append(again, rolling[k])
				continue
			}
			res.Subtracted += int(v[0])
			res.Removed += int(v[1])
			res.Deleted += int(v[2])
		}
		rolling = again
	}
	return res, nil
}

// expireWindowsCall returns the keys and arguments of windows board b's
// expiry at now (lua/expirew.lua), given the id sets it deletes.
func (s *Store) expireWindowsCall(b *boarddef.Board, now time.Time, idSets []string) ([]string, []any) {
	P := s.prefix(b)
	keys := []string{P + "x", P + "m", P + "n", expiryKey(P)}
	for _, q := range sliceSets(b) {
		keys = append(keys, sliceSetKey(P, q))
	}
	for j := range b.NumWindows() {
		keys = append(keys, windowKey(P, j))
	}
	a := expireWindowsArgs{prefix: P, tie: b.FirstReached(), rb: b.ReachedBits(), res: b.TieResolution().Milliseconds(), maxTotal: b.MaxTotal(),
		origin: b.Epoch().UnixMilli(), windows: windowsArg(b), floor: floorArg(b), neg: b.AllowNegative(),
		lengths: lengthsArg(b), cut: now.Add(-b.Grace()).UnixMilli(), through: expiredThrough(b, now)}
	for _, k := range idSets {
		keys = append(keys, k)
		a.idSets = append(a.idSets, strings.TrimPrefix(k, P))
	}
	return keys, a.append(nil)
}

// expiredThrough returns, per window of board b, the last of its slices
// that has left it at now (boarddef.Board.ExpiredThrough).
func expiredThrough(b *boarddef.Board, now time.Time) []int64 {
	out := make([]int64, b.NumWindows())
	for j := range out {
		out[j] = b.ExpiredThrough(j, now)
	}
	return out
}

// expirePlan reads, for each board, the keys of the slices its expiry at
// now would subtract from a window or delete: in each window's slice set,
// those above the window's last subtracted slice and at or below the one it
// moves to, and in each slice set those at or below the lowest last
// subtracted slice of its windows after it. For a windows board, whose
// slices are packed in its member states, they are the keys of the id sets
// of the slices it deletes.
func (s *Store) expirePlan(ctx context.Context, boards []*boarddef.Board, now time.Time) ([][]string, error) {
	p := s.rdb.Pipeline()
	xs := make([]*redis.SliceCmd, len(boards))
	ss := make([][]*redis.ZSliceCmd, len(boards)) // per board, per slice set
	for k, b := range boards {
		fields := make([]string, b.NumWindows())
		for j := range fields {
			fields[j] = strconv.Itoa(j)
		}
		xs[k] = p.HMGet(ctx, s.prefix(b)+"x", fields...)
		for _, q := range sliceSets(b) {
			var top int64 = math.MinInt64
			for j := range b.NumWindows() {
				if b.WindowRatio(j) == q {
					top = max(top, b.ExpiredThrough(j, now))
				}
			}
			ss[k] = append(ss[k], p.ZRangeByScoreWithScores(ctx, sliceSetKey(s.prefix(b), q), &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(top, 10)}))
		}
	}
	if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("board: expire: read slices: %w", err)
	}
	out := make([][]string, len(boards))
	for k, b := range boards {
		lo := make([]int64, b.NumWindows()) // last subtracted slice before, per window
		hi := make([]int64, b.NumWindows()) // and after
		for j, v := range xs[k].Val() {
			lo[j] = math.MinInt64
			if sv, ok := v.(string); ok {
				lo[j], _ = strconv.ParseInt(sv, 10, 64)
			}
			hi[j] = max(lo[j], b.ExpiredThrough(j, now))
		}
		for g, q := range sliceSets(b) {
			var lmin int64 = math.MaxInt64
			for j := range b.NumWindows() {
				if b.WindowRatio(j) == q {
					lmin = min(lmin, hi[j])
				}
			}
			for _, z := range ss[k][g].Val() {
				sl := int64(z.Score)
				if b.Kind() == boarddef.Windows {
					if sl <= lmin {
						out[k] = append(out[k], idSetKey(s.prefix(b), q, sl))
					}
					continue
				}
				need := sl <= lmin
				for j := range lo {
					need = need || b.WindowRatio(j) == q && sl > lo[j] && sl <= hi[j]
				}
				if need {
					out[k] = append(out[k], sliceSetKey(s.prefix(b), q)+":"+z.Member.(string))
				}
			}
		}
	}
	return out, nil
}

// rebase moves the base of each decay board to its target at now, in one
// pipelined round trip, and returns the sums rewritten. A rolling board's
// rebase rewrites its slices, whose keys it declares (see applyKeys): it is
// first sent without them, and one that is to move its base says so
// without writing; it is sent again with the slices read just before (and
// again if a slice came meanwhile).
func (s *Store) rebase(ctx context.Context, boards []*boarddef.Board, now time.Time) (int, error) {
	n := 0
	slices := make([][]string, len(boards))
	for attempt := 0; len(boards) > 0; attempt++ {
		if attempt == 5 {
			return n, fmt.Errorf("board %s: rebase: the slices kept changing", boards[0].Name())
		}
		cmds, err := s.eval(ctx, rebaseLua, len(boards), func(k int) ([]string, []any) {
			b := boards[k]
			P := s.prefix(b)
			a := rebaseArgs{prefix: P, target: b.DecayTarget(now), floor: floorArg(b), maxTotal: codec.MaxAmount, kind: scriptKind(b)}
			if b.Kind() == boarddef.Total {
				return []string{P + "T:b", P + "T:m", P + "T:z"}, a.append(nil)
			}
			a.origin = b.Epoch().UnixMilli()
			keys := []string{P + "b", P + "m", P + "z:0", P + "s"}
			for _, sl := range slices[k] {
				keys = append(keys, P+"s:"+sl)
			}
			return keys, a.append(nil)
		})
		if err != nil {
			return n, err
		}
		var again []*boarddef.Board
		for k, c := range cmds {
			v, err := c.Int64Slice()
			if err != nil || len(v) < 2 {
				return n, fmt.Errorf("board %s: rebase: %v %w", boards[k].Name(), v, err)
			}
			if len(v) == 3 { // a slice to rewrite was not declared
				again = append(again, boards[k])
				continue
			}
			n += int(v[1])
		}
		boards = again
		if slices, err = s.heldSlices(ctx, boards); err != nil {
			return n, err
		}
	}
	return n, nil
}

// heldSlices reads the slices each board holds.
func (s *Store) heldSlices(ctx context.Context, boards []*boarddef.Board) ([][]string, error) {
	out := make([][]string, len(boards))
	if len(boards) == 0 {
		return out, nil
	}
	p := s.rdb.Pipeline()
	cmds := make([]*redis.StringSliceCmd, len(boards))
	for k, b := range boards {
		cmds[k] = p.ZRange(ctx, s.prefix(b)+"s", 0, -1)
	}
	if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("board: rebase: read slices: %w", err)
	}
	for k, c := range cmds {
		out[k] = c.Val()
	}
	return out, nil
}
