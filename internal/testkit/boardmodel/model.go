// Package boardmodel is the pure-Go reference model of rostrum's
// leaderboards (docs/DESIGN.md §8, package board): the oracle that the board tests
// compare Redis with. It keeps every counted event in memory and computes
// totals, reached times and rankings from scratch on every read. It has no
// I/O and no clock, and favours being obviously correct over being fast.
//
// # Semantics
//
// Records arrive per topic-partition in offset order; a record at or below
// the last offset applied for its board and partition is a redelivery and
// changes nothing (the watermark). An event counts on every board that lists
// its type, unless:
//
//   - it is late by record time: the record's timestamp is at or after its
//     period's end + grace (periodic), or after the last window to hold it
//     has let it go + grace (rolling, windows);
//   - it is late in Redis (rolling, windows): every window had already
//     subtracted its slice when it arrived;
//   - it has an id already counted in the same period or slice (rolling,
//     windows: a window counts it unless its id was counted in the same
//     slice of the window's slice length).
//
// Totals: incr sums values; best keeps the largest value and the earliest
// time it was seen; set keeps the value of the newest event (equal times:
// the larger value). reached_at: for incr the newest counted event's time,
// for best and set the time of the event that gave the value.
//
// A rolling or windows board's window j counts time in slices of its own
// length g(j) (the board's slice unless the window names one): an event's
// slice in window j is floor(ts/g(j)). Window j holds the events it
// accepted on arrival (their slice was above its last subtracted slice)
// whose slice is still above its last subtracted slice. Expire(now) sets
// the last subtracted slice of window j to floor((now − grace)/g(j)) −
// slices(j) when that is higher.
//
// Rankings order by min(total, max_total) descending, then (first-reached
// boards) by floor((reached_at − origin)/tie_resolution) ascending, then by
// member descending (Redis's order for equal scores in a descending read).
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

// Entry is one ranked member.
type Entry struct {
	Member    string
	Rank      int64
	Total     int64
	ReachedAt int64
}

// LateEvent is an event that was not counted because it was late, or
// (Class set) because the board refused its value or it names no board.
type LateEvent struct {
	Board   string
	Event   int
	InRedis bool   // found late by the windows' state, not by record time
	Class   string // "" late; "value": refused value; "board": a remove naming no board
}

// Model is the reference model of a set of boards. It is not safe for
// concurrent use.
type Model struct {
	boards []*boarddef.Board
	st     []*boardState
}

type boardState struct {
	cal     *Calendar // periodic boards
	wm      map[string]int64
	ids     map[string]bool // bucket + "/" + id
	periods map[string]map[string]*acc
	origins map[string]int64 // period label → start ms
	events  []ev             // rolling: counted events
	last    []int64          // rolling: last subtracted slice per window
	set     []bool

	tot *totalState   // total boards (total.go)
	rd  *rollingDecay // rolling decay boards (rolling_decay.go)

	// settlement (periodic boards that settle)
	frozen  Period // the newest settled period; zero before the first
	settled []Settled
}

type acc struct{ total, reached int64 }

type ev struct {
	slice     int64   // the board's slice (rolling decay boards: their one window's)
	slices    []int64 // per window: the event's slice in the window's slice length
	member    string
	value, ts int64
	accepted  []bool
}

// New returns an empty model of boards.
func New(boards []*boarddef.Board) *Model {
	m := &Model{boards: boards}
	for _, b := range boards {
		n := len(b.WindowSlices())
		st := &boardState{wm: map[string]int64{}, ids: map[string]bool{},
			periods: map[string]map[string]*acc{}, origins: map[string]int64{},
			last: make([]int64, n), set: make([]bool, n)}
		if b.Kind() == boarddef.Periodic {
			st.cal = NewCalendar(b)
		}
		m.st = append(m.st, st)
	}
	return m
}

// Record applies one record's events, read from topic/partition at offset
// and produced at recordTime, and returns its late events.
func (m *Model) Record(topic string, partition int32, offset int64, recordTime time.Time, evs []codec.Event) []LateEvent {
	var late []LateEvent
	tp := topic + "/" + strconv.Itoa(int(partition))
	rt := recordTime.UnixMilli()
	for bi, b := range m.boards {
		st := m.st[bi]
		if wm, ok := st.wm[tp]; ok && offset <= wm {
			continue
		}
		counted := false
		for i := range evs { // a record's removals come before its other events
			if e := &evs[i]; e.Type == codec.TypeRemove && e.Board == b.Name() {
				counted = true
				st.remove(b, e)
			}
		}
		for i := range evs {
			e := &evs[i]
			if !b.Counts(e.Type) {
				continue
			}
			counted = true
			member := b.MemberOf(e)
			value, ok := units(b, e)
			if !ok {
				late = append(late, LateEvent{Board: b.Name(), Event: i, Class: "value"})
				continue
			}
			grace := b.Grace().Milliseconds()
			if b.Kind() == boarddef.Total {
				if l := m.recordTotal(bi, e, i, value, rt); l != nil {
					late = append(late, *l)
				}
				continue
			}
			if b.Kind() == boarddef.Periodic {
				p := st.cal.Of(time.UnixMilli(e.TS))
				if rt >= p.End.UnixMilli()+grace {
					late = append(late, LateEvent{Board: b.Name(), Event: i})
					continue
				}
				if st.frozen.Label != "" && !p.Start.After(st.frozen.Start) {
					late = append(late, LateEvent{Board: b.Name(), Event: i, InRedis: true}) // settled
					continue
				}
				if e.ID != "" {
					k := p.Label + "/" + e.ID
					if st.ids[k] {
						continue
					}
					st.ids[k] = true
				}
				st.origins[p.Label] = p.Start.UnixMilli()
				mm := st.periods[p.Label]
				if mm == nil {
					mm = map[string]*acc{}
					st.periods[p.Label] = mm
				}
				a := mm[member]
				switch {
				case a == nil:
					mm[member] = &acc{value, e.TS}
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
				continue
			}
			ws, wl := b.WindowSlices(), b.WindowSliceLengths()
			if b.FirstReached() && (e.TS < b.Epoch().UnixMilli() || e.TS >= b.Horizon().UnixMilli()) {
				late = append(late, LateEvent{Board: b.Name(), Event: i}) // rejected, class ts
				continue
			}
			sl := make([]int64, len(ws))
			gone := int64(math.MinInt64) // when the last window lets the event go
			for j, n := range ws {
				g := wl[j].Milliseconds()
				sl[j] = floorDiv(e.TS, g)
				gone = max(gone, (sl[j]+n)*g)
			}
			if rt >= gone+grace {
				late = append(late, LateEvent{Board: b.Name(), Event: i})
				continue
			}
			decay := b.HalfLife() > 0
			var belowBase bool
			if decay {
				l, inRedis := m.decayLate(bi, e.TS, rt)
				if l && !inRedis {
					late = append(late, LateEvent{Board: b.Name(), Event: i})
					continue
				}
				belowBase = l
			}
			acc := make([]bool, len(ws))
			any := false
			for j := range ws {
				acc[j] = !st.set[j] || sl[j] > st.last[j]
				any = any || acc[j]
			}
			if !any || belowBase {
				late = append(late, LateEvent{Board: b.Name(), Event: i, InRedis: true})
				continue
			}
			if e.ID != "" {
				// Per slice length: the id counts once in each slice.
				fresh := map[time.Duration]bool{}
				for j := range ws {
					if !acc[j] {
						continue
					}
					if _, seen := fresh[wl[j]]; !seen {
						k := wl[j].String() + "/" + strconv.FormatInt(sl[j], 10) + "/" + e.ID
						fresh[wl[j]] = !st.ids[k]
						st.ids[k] = true
					}
					acc[j] = fresh[wl[j]]
				}
				if !slices.Contains(acc, true) {
					continue // a duplicate
				}
			}
			s := floorDiv(e.TS, b.Slice().Milliseconds()) // the board's slice (a decay board's one window)
			if decay && !m.addDecay(bi, s, member, value, e.TS) {
				continue // saturated
			}
			st.events = append(st.events, ev{slice: s, slices: sl, member: member, value: value, ts: e.TS, accepted: acc})
		}
		if counted {
			st.wm[tp] = offset
		}
	}
	for i := range evs {
		if e := &evs[i]; e.Type == codec.TypeRemove && !slices.ContainsFunc(m.boards, func(b *boarddef.Board) bool { return b.Name() == e.Board }) {
			late = append(late, LateEvent{Board: e.Board, Event: i, Class: "board"})
		}
	}
	return late
}

// Expire advances every rolling and windows board's windows to now, and
// moves every decay board's base (Rebase).
func (m *Model) Expire(now time.Time) {
	m.Rebase(now)
	for bi, b := range m.boards {
		if b.Kind() == boarddef.Periodic || b.Kind() == boarddef.Total {
			continue
		}
		st := m.st[bi]
		wl := b.WindowSliceLengths()
		for j, n := range b.WindowSlices() {
			t := floorDiv(now.UnixMilli()-b.Grace().Milliseconds(), wl[j].Milliseconds()) - n
			if !st.set[j] || t > st.last[j] {
				st.last[j], st.set[j] = t, true
			}
		}
	}
}

// Periods returns the labels of a periodic board's periods with counted
// events, sorted.
func (m *Model) Periods(boardIdx int) []string {
	var out []string
	for l := range m.st[boardIdx].periods {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// Ranking returns a board's ranking: of period label (periodic) or window j
// (not of decay boards: TotalRanking, RollingDecayRanking).
func (m *Model) Ranking(boardIdx int, period string, window int) []Entry {
	b, st := m.boards[boardIdx], m.st[boardIdx]
	var out []Entry
	var origin int64
	if b.Kind() == boarddef.Periodic {
		origin = st.origins[period]
		for member, a := range st.periods[period] {
			out = append(out, Entry{Member: member, Total: floored(b, a.total), ReachedAt: a.reached})
		}
	} else {
		origin = b.Epoch().UnixMilli()
		tot := map[string]*acc{}
		for _, e := range st.events {
			if !e.accepted[window] || (st.set[window] && e.slices[window] <= st.last[window]) {
				continue
			}
			a := tot[e.member]
			if a == nil {
				a = &acc{}
				tot[e.member] = a
			}
			a.total += e.value
			a.reached = max(a.reached, e.ts)
		}
		for member, a := range tot {
			if a.total == 0 {
				continue // a window ranks members whose sum is not 0
			}
			out = append(out, Entry{Member: member, Total: floored(b, a.total), ReachedAt: a.reached})
		}
	}
	res := b.TieResolution().Milliseconds()
	rel := func(e Entry) int64 {
		if !b.FirstReached() {
			return 0
		}
		r := floorDiv(e.ReachedAt-origin, res)
		return max(0, min(r, int64(1)<<b.ReachedBits()-1))
	}
	slices.SortFunc(out, func(x, y Entry) int {
		tx, ty := max(min(x.Total, b.MaxTotal()), -b.MaxTotal()), max(min(y.Total, b.MaxTotal()), -b.MaxTotal())
		if tx != ty {
			if tx > ty {
				return -1
			}
			return 1
		}
		if rx, ry := rel(x), rel(y); rx != ry {
			if rx < ry {
				return -1
			}
			return 1
		}
		return -strings.Compare(x.Member, y.Member)
	})
	for i := range out {
		out[i].Rank = int64(i + 1)
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
