package flicker

// span is a half-open time interval [from, to), Unix ms.
type span struct{ from, to int64 }

func overlap(a, b span) int64 {
	return max(0, min(a.to, b.to)-max(a.from, b.from))
}

// timeline records, per member, the intervals during which it was in a
// list (shown by a strategy, or in the raw top-N).
type timeline struct {
	on    map[string]int64 // members in the list now → since when
	spans map[string][]span
}

func newTimeline() timeline {
	return timeline{on: map[string]int64{}, spans: map[string][]span{}}
}

// set makes ids the list from time at on.
func (tl *timeline) set(ids []string, at int64) {
	for id, since := range tl.on {
		if !contains(ids, id) {
			tl.spans[id] = append(tl.spans[id], span{since, at})
			delete(tl.on, id)
		}
	}
	for _, id := range ids {
		if _, ok := tl.on[id]; !ok {
			tl.on[id] = at
		}
	}
}

// close ends every open interval at end.
func (tl *timeline) close(end int64) { tl.set(nil, end) }

// firstOn returns how long after from the member id was first in the list
// within [from, to): 0 when it already was at from. When it never was, it
// returns to-from and false.
func (tl *timeline) firstOn(id string, from, to int64) (int64, bool) {
	for _, s := range tl.spans[id] {
		if s.to > from && s.from < to {
			return max(0, s.from-from), true
		}
	}
	return to - from, false
}

// stint is a member's interval in (or out of) the list.
type stint struct {
	id       string
	from, to int64
}

// stints returns, from a timeline of the raw top-N closed at end, the
// stints of at least min ms that begin at or after from (members who truly
// belong), and per member the gaps of at least min ms after one of its
// stints (when it truly no longer belongs).
func (tl *timeline) stints(min, from, end int64) (belong []stint, out map[string][]span) {
	out = map[string][]span{}
	for id, spans := range tl.spans {
		for i, s := range spans {
			if s.to-s.from >= min && s.from >= from {
				belong = append(belong, stint{id, s.from, s.to})
			}
			gap := end
			if i+1 < len(spans) {
				gap = spans[i+1].from
			}
			if gap-s.to >= min {
				out[id] = append(out[id], span{s.to, gap})
			}
		}
	}
	return belong, out
}

func contains(s []string, m string) bool {
	for _, x := range s {
		if x == m {
			return true
		}
	}
	return false
}
