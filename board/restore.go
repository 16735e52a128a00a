package board

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/board/boarddef"
)

// Restoring settlement after Redis lost its data (docs/DESIGN.md §8
// "Settled periods"). The settle state lives in Redis: without it a
// board would settle, and publish again, the last closed period. The
// processor reads {env}.boards.settled back and hands its records to
// RestoreSettled before it adopts the new Redis generation, so before any
// settlement runs on it.

// settledJSON is the part of a settled record RestoreSettled reads.
type settledJSON struct {
	Board    string `json:"board"`
	Period   string `json:"period"`
	ClosedAt int64  `json:"closed_at"`
	Members  int64  `json:"members"`
	Top      []struct {
		Member    string      `json:"member"`
		Total     json.Number `json:"total"`
		ReachedAt int64       `json:"reached_at"`
	} `json:"top"`
}

// RestoreSettled restores, from records published on {env}.boards.settled
// (their values, in any order, repeats allowed), every settling board's
// newest settled period as its frozen mark and the snapshots of its
// newest SettleRetention settled periods. Records of boards not
// configured (or that do not settle), and malformed ones, are skipped. It
// returns the number of snapshots written.
func (s *Store) RestoreSettled(ctx context.Context, values [][]byte) (int, error) {
	byBoard := map[string]map[string]settledJSON{}
	for _, v := range values {
		var r settledJSON
		if json.Unmarshal(v, &r) != nil {
			continue
		}
		b, ok := s.byName[r.Board]
		if !ok || !b.Settles() {
			continue
		}
		if _, err := b.ParsePeriod(r.Period); err != nil {
			continue
		}
		if byBoard[r.Board] == nil {
			byBoard[r.Board] = map[string]settledJSON{}
		}
		byBoard[r.Board][r.Period] = r
	}
	written := 0
	for _, b := range s.boards {
		recs := byBoard[b.Name()]
		if len(recs) == 0 {
			continue
		}
		labels := make([]string, 0, len(recs))
		for l := range recs {
			labels = append(labels, l)
		}
		slices.Sort(labels) // labels of one board sort in time order
		keep := labels[max(0, len(labels)-b.SettleRetention()):]
		n, err := s.restoreBoard(ctx, b, labels[len(labels)-1], keep, recs)
		written += n
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// restoreBoard restores board b's settlement: each kept period's snapshot
// and frozen flag in its own slot (restoreperiod.lua, one call per period,
// pipelined), then the board's frozen mark and index of settled periods
// (restore.lua). The snapshots come first: once the mark moves, Settle
// reads the index.
func (s *Store) restoreBoard(ctx context.Context, b *boarddef.Board, newest string, keep []string, recs map[string]settledJSON) (int, error) {
	type call struct {
		keys []string
		args []any
	}
	calls := make([]call, 0, len(keep))
	for _, l := range keep {
		r := recs[l]
		p, _ := b.ParsePeriod(l)
		Q, snap := s.periodPrefix(b, l), s.snapKey(b, l)
		a := restorePeriodArgs{label: l, snapExpire: s.snapExpireAt(b, p), stateExpire: max(s.snapExpireAt(b, p), b.KeptUntil(p).UnixMilli()),
			info: strconv.FormatInt(r.Members, 10) + " " + strconv.FormatInt(r.ClosedAt, 10)}
		for _, e := range r.Top {
			total, err := b.ParseUnits(e.Total.String())
			if err != nil {
				return 0, fmt.Errorf("board %s: restore settled %s: total %q: %w", b.Name(), l, e.Total, err)
			}
			a.entries = append(a.entries, strconv.FormatInt(total, 10)+" "+strconv.FormatInt(e.ReachedAt, 10)+" "+e.Member)
		}
		calls = append(calls, call{[]string{Q + "st", snap, snap + ":i"}, a.append(nil)})
	}
	cmds, err := s.eval(ctx, restorePeriodLua, len(calls), func(k int) ([]string, []any) { return calls[k].keys, calls[k].args })
	if err != nil {
		return 0, fmt.Errorf("board %s: restore settled: %w", b.Name(), err)
	}
	written := 0
	for _, c := range cmds {
		n, _ := c.Int()
		written += n
	}
	// Register the restored periods without stamping them: Adopt, which
	// follows, stamps them with the new generation.
	reg := s.rdb.Pipeline()
	for _, l := range keep {
		p, _ := b.ParsePeriod(l)
		exp := slotExpireAt(b, b.KeptUntil(p).UnixMilli(), p.End.UnixMilli())
		reg.ZAddNX(ctx, s.registryKey(), redis.Z{Score: float64(exp), Member: registryMember(b, l)})
	}
	if _, err := reg.Exec(ctx); err != nil {
		return written, fmt.Errorf("board %s: restore settled: register periods: %w", b.Name(), err)
	}
	P := s.prefix(b)
	a := restoreArgs{newest: newest, retention: b.SettleRetention()}
	for _, l := range keep {
		p, _ := b.ParsePeriod(l)
		a.periods = append(a.periods, restoredPeriod{label: l, start: p.Start.UnixMilli()})
	}
	if _, err := s.eval(ctx, restoreLua, 1, func(int) ([]string, []any) { return []string{P + "st", P + "SL"}, a.append(nil) }); err != nil {
		return written, fmt.Errorf("board %s: restore settled: %w", b.Name(), err)
	}
	return written, nil
}
