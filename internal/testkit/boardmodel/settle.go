package boardmodel

import (
	"time"
)

// Settlement: a settling board freezes each period once it has closed (its
// end + grace at or before the time Settle is given), in order, starting
// with the last period closed at its first Settle. A frozen period keeps
// its ranking: later events for it, or any period before it, are late. Its
// snapshot is its top SettleTop entries with the number of members.

// Settled is one settled period.
type Settled struct {
	Board    string
	Period   string
	ClosedAt int64 // Unix ms: end + grace
	Members  int64
	Top      []Entry
}

// Settle settles every period closed at now on every settling board and
// returns the periods it settled, oldest first per board.
func (m *Model) Settle(now time.Time) []Settled {
	var out []Settled
	for bi, b := range m.boards {
		st := m.st[bi]
		if st.cal == nil || !b.Settles() {
			continue
		}
		for {
			var p Period
			if st.frozen.Label == "" {
				cur := st.cal.Of(now.Add(-b.Grace()))
				p = st.cal.Of(cur.Start.Add(-time.Millisecond))
			} else {
				p = st.cal.Next(st.frozen)
			}
			if p.End.Add(b.Grace()).After(now) {
				break
			}
			r := m.Ranking(bi, p.Label, 0)
			s := Settled{Board: b.Name(), Period: p.Label, ClosedAt: p.End.Add(b.Grace()).UnixMilli(),
				Members: int64(len(r)), Top: r[:min(len(r), b.SettleTop())]}
			if s.Top == nil {
				s.Top = []Entry{}
			}
			st.frozen = p
			st.settled = append(st.settled, s)
			out = append(out, s)
		}
	}
	return out
}

// SettledOf returns the periods a board settled, oldest first.
func (m *Model) SettledOf(boardIdx int) []Settled { return m.st[boardIdx].settled }
