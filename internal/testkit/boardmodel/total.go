package boardmodel

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
)

// Total boards and decay, as docs/DESIGN.md §8 states them, written without
// the board package's code:
//
//   - A total board keeps one ranking that never resets. An event id counts
//     once per UTC day of its ts. Nothing is late without decay.
//   - A decay board (half-life H, origin epoch) keeps per member an integer
//     sum S: an event of value v at ts adds v·M·2^(h−k), h =
//     floor((ts − epoch)/H), M = round(2^20·2^((ts − epoch − h·H)/H)), k the
//     base. The sum is kept within ±(2^53 − 1).
//   - The base moves with the clock (Rebase, which the tests call with the
//     clock of each Apply and expiry): to floor((now − grace − epoch)/H) − 1
//     when that is higher (or when there is none yet); every S becomes
//     floor(S / 2^(new − old)), and members whose S becomes 0 leave.
//   - An event is late by record time when its record time ≥ epoch +
//     (h+2)·H + grace, and late in Redis when h < k. Ids count once per h.
//   - A read at now shows round(S / 2^20 / 2^((now − epoch − k·H)/H)), half
//     away from zero, then the floor; the ranking orders by max(S, floor),
//     then member descending.

type totalState struct {
	acc     map[string]*acc // member → total (decay: S) and reached
	base    int64
	hasBase bool
}

func (m *Model) total(bi int) *totalState {
	st := m.st[bi]
	if st.tot == nil {
		st.tot = &totalState{acc: map[string]*acc{}}
	}
	return st.tot
}

// recordTotal counts event e (its index i, value in units) on total board bi.
func (m *Model) recordTotal(bi int, e *codec.Event, i int, value, rt int64) *LateEvent {
	b, st := m.boards[bi], m.st[bi]
	ts := m.total(bi)
	member := b.MemberOf(e)
	var bucket string
	if h := b.HalfLife().Milliseconds(); h > 0 {
		epoch := b.Epoch().UnixMilli()
		hi := floorDiv(e.TS-epoch, h)
		if rt >= epoch+(hi+2)*h+b.Grace().Milliseconds() {
			return &LateEvent{Board: b.Name(), Event: i}
		}
		if !ts.hasBase {
			panic("boardmodel: call Rebase before recording a decay board's events, as Apply moves the base first")
		}
		if hi < ts.base {
			return &LateEvent{Board: b.Name(), Event: i, InRedis: true}
		}
		_, mant := mantissa(b, e.TS)
		value = value * mant << (hi - ts.base)
		bucket = "h" + strconv.FormatInt(hi, 10)
	} else {
		if b.FirstReached() && (e.TS < b.Epoch().UnixMilli() || e.TS >= b.Horizon().UnixMilli()) {
			return &LateEvent{Board: b.Name(), Event: i} // rejected, class ts
		}
		bucket = time.UnixMilli(e.TS).UTC().Format("2006-01-02")
	}
	if e.ID != "" {
		k := "T" + bucket + "/" + e.ID
		if st.ids[k] {
			return nil
		}
		st.ids[k] = true
	}
	a := ts.acc[member]
	switch {
	case a == nil:
		a = &acc{value, e.TS}
		ts.acc[member] = a
	case b.Op() == boarddef.Incr:
		a.total += value
		a.reached = max(a.reached, e.TS)
	case b.Op() == boarddef.Best:
		if value > a.total || (value == a.total && e.TS < a.reached) {
			a.total, a.reached = value, e.TS
		}
	default:
		if e.TS > a.reached || (e.TS == a.reached && value > a.total) {
			a.total, a.reached = value, e.TS
		}
	}
	if b.HalfLife() > 0 {
		const maxS = 1<<53 - 1
		a.total = max(min(a.total, maxS), -maxS)
	}
	return nil
}

// Rebase moves every decay board's base to its target at now (see above).
func (m *Model) Rebase(now time.Time) {
	for bi, b := range m.boards {
		h := b.HalfLife().Milliseconds()
		if h == 0 {
			continue
		}
		target := floorDiv(now.UnixMilli()-b.Grace().Milliseconds()-b.Epoch().UnixMilli(), h) - 1
		if b.Kind() == boarddef.Rolling {
			m.rebaseRolling(bi, target)
			continue
		}
		ts := m.total(bi)
		if !ts.hasBase {
			ts.base, ts.hasBase = target, true
			continue
		}
		if target <= ts.base {
			continue
		}
		shift := min(target-ts.base, 63)
		for member, a := range ts.acc {
			a.total >>= shift // an arithmetic shift: floor
			if a.total == 0 {
				delete(ts.acc, member)
			}
		}
		ts.base = target
	}
}

// Sums returns a total board's stored totals by member (decay boards: the
// sums S), as Redis keeps them.
func (m *Model) Sums(boardIdx int) map[string]int64 {
	out := map[string]int64{}
	for member, a := range m.total(boardIdx).acc {
		out[member] = a.total
	}
	return out
}

// Base returns a decay board's base (false before the first Rebase).
func (m *Model) Base(boardIdx int) (int64, bool) {
	ts := m.total(boardIdx)
	return ts.base, ts.hasBase
}

// TotalRanking returns a total board's ranking read at now: decay boards
// show the decayed value at now.
func (m *Model) TotalRanking(boardIdx int, now time.Time) []Entry {
	b := m.boards[boardIdx]
	ts := m.total(boardIdx)
	type row struct {
		e   Entry
		key int64 // what the ranking orders by
	}
	var rows []row
	h := b.HalfLife().Milliseconds()
	for member, a := range ts.acc {
		shown := a.total
		if h > 0 {
			t0 := b.Epoch().UnixMilli() + ts.base*h
			v := float64(a.total) / (1 << 20) / math.Pow(2, float64(now.UnixMilli()-t0)/float64(h))
			shown = int64(math.Round(v))
		}
		rows = append(rows, row{Entry{Member: member, Total: floored(b, shown), ReachedAt: a.reached}, floored(b, a.total)})
	}
	origin := b.Epoch().UnixMilli()
	res := b.TieResolution().Milliseconds()
	slices.SortFunc(rows, func(x, y row) int {
		kx, ky := x.key, y.key
		if h == 0 {
			kx, ky = max(min(kx, b.MaxTotal()), -b.MaxTotal()), max(min(ky, b.MaxTotal()), -b.MaxTotal())
		}
		if kx != ky {
			if kx > ky {
				return -1
			}
			return 1
		}
		if b.FirstReached() {
			rx, ry := floorDiv(x.e.ReachedAt-origin, res), floorDiv(y.e.ReachedAt-origin, res)
			if rx != ry {
				if rx < ry {
					return -1
				}
				return 1
			}
		}
		return -strings.Compare(x.e.Member, y.e.Member)
	})
	out := make([]Entry, len(rows))
	for i, r := range rows {
		out[i] = r.e
		out[i].Rank = int64(i + 1)
	}
	return out
}
