package boardmodel

import (
	"slices"
	"time"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
)

// Corrections and decimals, as docs/DESIGN.md §8 states them, written
// without the board package's code:
//
//   - A value is the event's amount in units of 1/scale: digits × scale /
//     10^decimals, refused when that is not an integer (finer than the
//     scale), when it is negative on a board without allow-negative, or
//     when its magnitude passes max-total. A value: one board counts 1
//     per event (−1 for a negative amount).
//   - A member's sum is exact; the total it shows and ranks with is
//     max(sum, floor), unless the board has no floor. reached_at stays the
//     newest counted event's time, decreases included.
//   - A remove event for the board takes its member out of the period of
//     its ts and the Retention periods before it (periodic), or out of
//     every window and slice (rolling, windows: all its counted events);
//     with settled, out of every settled snapshot (ranks close up, the
//     member count is the one at freeze).
//   - A window ranks only members whose sum is not 0.

// units converts e's amount for board b; false when b refuses it.
func units(b *boarddef.Board, e *codec.Event) (int64, bool) {
	var v int64
	if b.CountsEvents() {
		v = 1
		if e.Value < 0 {
			v = -1
		}
	} else {
		pow := int64(1)
		for range e.Decimals {
			pow *= 10
		}
		if (e.Value*b.Scale())%pow != 0 {
			return 0, false
		}
		v = e.Value * b.Scale() / pow
	}
	if v < 0 && !b.AllowNegative() {
		return 0, false
	}
	if v > b.MaxTotal() || -v > b.MaxTotal() {
		return 0, false
	}
	return v, true
}

// floored is the total a member with sum shows on b.
func floored(b *boarddef.Board, sum int64) int64 {
	if f, ok := b.Floor(); ok && sum < f {
		return f
	}
	return sum
}

// remove applies remove event e to board b's state.
func (st *boardState) remove(b *boarddef.Board, e *codec.Event) {
	member := b.MemberOf(e)
	if st.tot != nil || b.Kind() == boarddef.Total {
		if st.tot != nil {
			delete(st.tot.acc, member)
		}
		return
	}
	if st.cal == nil {
		if st.rd != nil {
			for _, c := range st.rd.cells {
				delete(c, member)
			}
		}
		st.events = slices.DeleteFunc(st.events, func(x ev) bool { return x.member == member })
		return
	}
	p := st.cal.Of(time.UnixMilli(e.TS))
	for range b.Retention() + 1 {
		delete(st.periods[p.Label], member)
		p = st.cal.Of(p.Start.Add(-time.Millisecond))
	}
	if !e.Settled {
		return
	}
	for k := range st.settled {
		s := &st.settled[k]
		s.Top = slices.DeleteFunc(slices.Clone(s.Top), func(x Entry) bool { return x.Member == member })
		for r := range s.Top {
			s.Top[r].Rank = int64(r + 1)
		}
	}
}
