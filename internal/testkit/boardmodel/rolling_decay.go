package boardmodel

import (
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/rostrumhq/rostrum/board/boarddef"
)

// Rolling decay boards, as docs/DESIGN.md §8 states them, written without
// the board package's code:
//
//   - The half-life H is a whole number of slices, so every event of a
//     slice has the same half-life index h = floor((ts − epoch)/H).
//   - Each (slice, member) keeps an integer cell: an event of value v at ts
//     adds v·M·2^(h−k) to its cell, M = round(2^20·2^((ts − epoch −
//     h·H)/H)), k the base. A member's window sum is the sum of its cells
//     of the slices in the window. An event that would take its cell or its
//     window sum beyond ±(2^53 − 1) is not counted (its id stays seen).
//     (Redis decides this per entry it is sent: a batch folds the events
//     of one member in one slice that carry no id; the tests keep sums far
//     below the bound where that could differ.)
//   - Rebase moves the base as on total boards (the tests call it with the
//     clock of each Apply and expiry), and every cell becomes floor(cell /
//     2^(new − old)): the window sum is the sum of the floored cells, not
//     the floor of the sum.
//   - An event is late by record time when its slice has left the window
//     plus grace or its record time ≥ epoch + (h+2)·H + grace; late in
//     Redis when the window had subtracted its slice, or h < k.
//   - A read at now shows each member's window sum S, when not 0, as
//     round(S / 2^20 / 2^((now − epoch − k·H)/H)) then the floor, ranked by
//     max(S, floor), then member descending. reached_at is the newest
//     counted event in the window.

type rollingDecay struct {
	base    int64
	hasBase bool
	cells   map[int64]map[string]int64 // slice → member → weighted sum
}

func (st *boardState) decay() *rollingDecay {
	if st.rd == nil {
		st.rd = &rollingDecay{cells: map[int64]map[string]int64{}}
	}
	return st.rd
}

// mantissa returns M for a decay board's event at ts: round(2^20 · 2^(r/H)).
func mantissa(b *boarddef.Board, ts int64) (h, m int64) {
	hl, epoch := b.HalfLife().Milliseconds(), b.Epoch().UnixMilli()
	h = floorDiv(ts-epoch, hl)
	r := ts - epoch - h*hl
	return h, int64(math.Floor(math.Pow(2, 20+float64(r)/float64(hl)) + 0.5))
}

// decayLate reports whether an event at ts of a rolling decay board is
// late: by record time rt (inRedis false), or below the base (true).
func (m *Model) decayLate(bi int, ts, rt int64) (late, inRedis bool) {
	b, rd := m.boards[bi], m.st[bi].decay()
	h, _ := mantissa(b, ts)
	if rt >= b.Epoch().UnixMilli()+(h+2)*b.HalfLife().Milliseconds()+b.Grace().Milliseconds() {
		return true, false
	}
	if !rd.hasBase {
		panic("boardmodel: call Rebase before recording a decay board's events, as Apply moves the base first")
	}
	return h < rd.base, true
}

// addDecay adds value (units) of an event at ts in slice s for member to
// its cell; false when the cell or the window sum would leave the exact
// range.
func (m *Model) addDecay(bi int, s int64, member string, value, ts int64) bool {
	b, rd := m.boards[bi], m.st[bi].decay()
	h, mant := mantissa(b, ts)
	w := value * mant << (h - rd.base)
	const maxS = 1<<53 - 1
	cell := rd.cells[s][member] + w
	sum := m.windowSum(bi, member) + w
	if cell > maxS || cell < -maxS || sum > maxS || sum < -maxS {
		return false
	}
	if rd.cells[s] == nil {
		rd.cells[s] = map[string]int64{}
	}
	rd.cells[s][member] = cell
	return true
}

// inWindow reports whether slice s is in rolling board bi's window.
func (m *Model) inWindow(bi int, s int64) bool {
	st := m.st[bi]
	return !st.set[0] || s > st.last[0]
}

// rebaseRolling moves rolling decay board bi's base to target.
func (m *Model) rebaseRolling(bi int, target int64) {
	rd := m.st[bi].decay()
	if !rd.hasBase {
		rd.base, rd.hasBase = target, true
		return
	}
	if target <= rd.base {
		return
	}
	shift := min(target-rd.base, 63)
	for _, c := range rd.cells {
		for member, v := range c {
			c[member] = v >> shift // an arithmetic shift: floor
		}
	}
	rd.base = target
}

// windowSum returns member's window sum on rolling decay board bi: the sum
// of its cells in the window's slices. (windowSums walks every event
// recorded; one event's check must not, or a long trace is quadratic.)
func (m *Model) windowSum(bi int, member string) int64 {
	var sum int64
	for s, c := range m.st[bi].decay().cells {
		if m.inWindow(bi, s) {
			sum += c[member]
		}
	}
	return sum
}

// windowSums returns rolling decay board bi's window sums: members with a
// counted event in the window, zero sums included.
func (m *Model) windowSums(bi int) map[string]int64 {
	st := m.st[bi]
	out := map[string]int64{}
	for _, e := range st.events {
		if m.inWindow(bi, e.slice) {
			out[e.member] += 0
		}
	}
	for s, c := range st.decay().cells {
		if !m.inWindow(bi, s) {
			continue
		}
		for member, v := range c {
			if _, ok := out[member]; ok {
				out[member] += v
			}
		}
	}
	return out
}

// WindowSums returns a rolling decay board's window sums S by member, as
// Redis keeps them (members with an event in the window, sums of 0
// included).
func (m *Model) WindowSums(boardIdx int) map[string]int64 { return m.windowSums(boardIdx) }

// SliceSums returns a rolling decay board's cells of the slices in its
// window: slice → member → weighted sum, as Redis keeps them.
func (m *Model) SliceSums(boardIdx int) map[int64]map[string]int64 {
	out := map[int64]map[string]int64{}
	for s, c := range m.st[boardIdx].decay().cells {
		if m.inWindow(boardIdx, s) && len(c) > 0 {
			out[s] = maps.Clone(c)
		}
	}
	return out
}

// DecayBase returns a rolling decay board's base (false before the first
// Rebase).
func (m *Model) DecayBase(boardIdx int) (int64, bool) {
	rd := m.st[boardIdx].decay()
	return rd.base, rd.hasBase
}

// RollingDecayRanking returns a rolling decay board's ranking read at now.
func (m *Model) RollingDecayRanking(boardIdx int, now time.Time) []Entry {
	b, st := m.boards[boardIdx], m.st[boardIdx]
	rd := st.decay()
	reached := map[string]int64{}
	for _, e := range st.events {
		if m.inWindow(boardIdx, e.slice) {
			reached[e.member] = max(reached[e.member], e.ts)
		}
	}
	type row struct {
		e   Entry
		key int64
	}
	var rows []row
	h := b.HalfLife().Milliseconds()
	t0 := b.Epoch().UnixMilli() + rd.base*h
	for member, s := range m.windowSums(boardIdx) {
		if s == 0 {
			continue
		}
		v := float64(s) / (1 << 20) / math.Pow(2, float64(now.UnixMilli()-t0)/float64(h))
		rows = append(rows, row{Entry{Member: member, Total: floored(b, int64(math.Round(v))), ReachedAt: reached[member]}, floored(b, s)})
	}
	slices.SortFunc(rows, func(x, y row) int {
		if x.key != y.key {
			if x.key > y.key {
				return -1
			}
			return 1
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
