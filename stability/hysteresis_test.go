package stability

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// raw builds a raw top list from ids, scores falling by 10 from 100.
func raw(ids ...string) []Member {
	out := make([]Member, len(ids))
	for i, id := range ids {
		out[i] = Member{ID: id, Score: float64(100 - 10*i)}
	}
	return out
}

// ranked gives every member of prev a Ranked standing.
func ranked(prev []string) []Standing {
	s := make([]Standing, len(prev))
	for i := range s {
		s[i] = Standing{Score: 75, Ranked: true} // within the margin of the raw scores below 100
	}
	return s
}

func TestHysteresisTable(t *testing.T) {
	h := Hysteresis{N: 3, Dwell: time.Second, Grace: 3 * time.Second, Margin: 50}
	tests := []struct {
		name     string
		prev     []string
		state    State
		standing []Standing // nil: ranked(prev)
		raw      []Member
		now      int64
		want     []string
		wantSt   string
	}{
		{name: "first list fills free slots at once", raw: raw("a", "b", "c"), now: 1000,
			want: []string{"a", "b", "c"}},
		{name: "reorder changes nothing", prev: []string{"a", "b", "c"}, raw: raw("c", "a", "b"), now: 1000,
			want: []string{"a", "b", "c"}},
		{name: "challenger waits for its dwell", prev: []string{"a", "b", "c"}, raw: raw("a", "b", "d"), now: 1000,
			want: []string{"a", "b", "c"}, wantSt: "1|d=1000|c=1000"},
		{name: "challenger replaces after its dwell", prev: []string{"a", "b", "c"},
			state: State{Pending: []Timer{{"d", 1000}}, Out: []Timer{{"c", 1000}}},
			raw:   raw("a", "b", "d"), now: 2000, want: []string{"a", "b", "d"}},
		{name: "dwell restarts after the challenger dropped out", prev: []string{"a", "b", "c"},
			state: State{}, raw: raw("a", "b", "d"), now: 1900,
			want: []string{"a", "b", "c"}, wantSt: "1|d=1900|c=1900"},
		{name: "margin replaces at once", prev: []string{"a", "b", "c"},
			standing: []Standing{{90, true, false}, {80, true, false}, {5, true, false}},
			raw:      raw("a", "b", "d"), now: 1000, want: []string{"a", "b", "d"}},
		{name: "below the margin waits", prev: []string{"a", "b", "c"},
			standing: []Standing{{90, true, false}, {80, true, false}, {75, true, false}},
			raw:      raw("a", "b", "d"), now: 1000, want: []string{"a", "b", "c"}, wantSt: "1|d=1000|c=1000"},
		{name: "urgent member never waits", prev: []string{"a", "b", "c"},
			raw: []Member{{"a", 100, false}, {"h", 90, true}, {"b", 80, false}}, now: 1000,
			want: []string{"a", "b", "h"}},
		{name: "left member goes at once, slot refilled", prev: []string{"a", "b", "c"},
			standing: []Standing{{90, true, false}, {0, false, false}, {70, true, false}},
			raw:      raw("a", "c", "d"), now: 1000, want: []string{"a", "d", "c"}},
		{name: "drop goes at once", prev: []string{"a", "b", "c"},
			standing: []Standing{{90, true, false}, {1, true, true}, {70, true, false}},
			raw:      raw("a", "c", "d"), now: 1000, want: []string{"a", "d", "c"}},
		{name: "drop inside the raw top-N stays", prev: []string{"a", "b", "c"},
			standing: []Standing{{90, true, false}, {1, true, true}, {70, true, false}},
			raw:      raw("a", "c", "b"), now: 1000, want: []string{"a", "b", "c"}},
		{name: "grace ends: best challenger takes the slot", prev: []string{"a", "b", "c"},
			state: State{Pending: []Timer{{"d", 3500}}, Out: []Timer{{"c", 1000}}},
			raw:   raw("a", "b", "d"), now: 4000, want: []string{"a", "b", "d"}},
		{name: "weakest out member is replaced first", prev: []string{"a", "b", "c"},
			state:    State{Pending: []Timer{{"d", 0}}, Out: []Timer{{"b", 0}, {"c", 0}}},
			standing: []Standing{{90, true, false}, {20, true, false}, {40, true, false}},
			raw:      raw("a", "d", "e"), now: 1000, want: []string{"a", "d", "c"}, wantSt: "1|e=1000|c=0"},
		{name: "room shrinks: list shrinks, later member moves down", prev: []string{"a", "b", "c"},
			standing: []Standing{{90, true, false}, {0, false, false}, {70, true, false}},
			raw:      raw("a", "c"), now: 1000, want: []string{"a", "c"}},
		{name: "empty raw empties the list", prev: []string{"a"}, standing: []Standing{{}}, now: 1000,
			want: []string{}},
		{name: "N lowered: extra out members go", prev: []string{"a", "b", "c", "d", "e"},
			raw: raw("c", "d", "e"), now: 1000, want: []string{"c", "d", "e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := State{Pending: slices.Clone(tt.state.Pending), Out: slices.Clone(tt.state.Out)}
			standing := tt.standing
			if standing == nil {
				standing = ranked(tt.prev)
			}
			got := h.Step(nil, &st, tt.prev, standing, tt.raw, tt.now)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("list %v, want %v", got, tt.want)
			}
			if s := st.String(); s != tt.wantSt {
				t.Fatalf("state %q, want %q", s, tt.wantSt)
			}
		})
	}
}

// world is a small random room for the property tests: members with
// scores, some unranked, some marked drop or urgent.
type world struct {
	r      *rand.Rand
	score  map[string]float64
	ranked map[string]bool
	drop   map[string]bool
	urgent map[string]bool
}

func newWorld(r *rand.Rand) *world {
	w := &world{r: r, score: map[string]float64{}, ranked: map[string]bool{}, drop: map[string]bool{}, urgent: map[string]bool{}}
	for i := range 12 {
		id := fmt.Sprintf("u%d", i)
		w.score[id] = float64(r.IntN(100))
		w.ranked[id] = true
	}
	return w
}

// change makes one random change: a score moves, a member leaves or comes
// back, mutes, or becomes urgent.
func (w *world) change() {
	id := fmt.Sprintf("u%d", w.r.IntN(12))
	switch k := w.r.IntN(20); {
	case k < 14:
		w.score[id] = float64(w.r.IntN(100))
	case k < 16:
		w.ranked[id] = !w.ranked[id]
	case k < 18:
		w.drop[id] = !w.drop[id]
	default:
		w.urgent[id] = !w.urgent[id]
	}
}

// raw returns the ranked members, best first (ties by id).
func (w *world) raw() []Member {
	var out []Member
	for id, s := range w.score {
		if w.ranked[id] {
			out = append(out, Member{ID: id, Score: s, Urgent: w.urgent[id]})
		}
	}
	slices.SortFunc(out, func(a, b Member) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	return out
}

func (w *world) standing(prev []string) []Standing {
	s := make([]Standing, len(prev))
	for i, id := range prev {
		s[i] = Standing{Score: w.score[id], Ranked: w.ranked[id], Drop: w.drop[id]}
	}
	return s
}

// TestHysteresisProperties drives random rooms through random changes and
// steps (some at the deadline Next reports) and checks after every step:
// the list is at most N long and as long as the raw top-N, holds no
// duplicate, never shows an unranked member or a dropped one outside the
// raw top-N, shows every urgent member of the raw top-N, and keeps the slot
// of every member that stays; stepping again at the same time changes
// nothing. Then it holds the raw top-N still for max(dwell, grace) and
// requires the shown set to equal it.
func TestHysteresisProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for iter := 0; iter < 300; iter++ {
		h := Hysteresis{N: 1 + r.IntN(7), Dwell: time.Duration(r.IntN(3)) * 500 * time.Millisecond,
			Grace: time.Duration(r.IntN(4)) * 500 * time.Millisecond, Margin: []float64{0, 30, math.Inf(1)}[r.IntN(3)]}
		w := newWorld(r)
		var list []string
		var st State
		now := int64(1_000_000)
		for step := 0; step < 200; step++ {
			for k := r.IntN(3); k > 0; k-- {
				w.change()
			}
			if next := h.Next(&st); next > now && r.IntN(3) == 0 {
				now = next // the timer fires
			} else {
				now += int64(r.IntN(400))
			}
			prev := list
			rw := w.raw()
			list = h.Step(nil, &st, prev, w.standing(prev), rw, now)
			checkStep(t, h, prev, list, &st, w, rw, now)
		}
		// The raw top-N holds still: after the dwell and grace the sets agree.
		rw := w.raw()
		end := now + max(h.Dwell, h.Grace).Milliseconds()
		for now < end {
			now = min(end, now+int64(1+r.IntN(300)))
			if next := h.Next(&st); next > 0 && next < now {
				now = next
			}
			list = h.Step(nil, &st, list, w.standing(list), rw, now)
		}
		top := rw[:min(h.N, len(rw))]
		if !sameSet(list, ids(top)) {
			t.Fatalf("%+v: raw top %v still for %d ms, shown %v (state %s)", h, ids(top), max(h.Dwell, h.Grace).Milliseconds(), list, st.String())
		}
		if !st.Empty() {
			t.Fatalf("%+v: settled list %v keeps timers %s", h, list, st.String())
		}
	}
}

func checkStep(t *testing.T, h Hysteresis, prev, list []string, st *State, w *world, rw []Member, now int64) {
	t.Helper()
	top := rw[:min(h.N, len(rw))]
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("%+v at %d: prev %v, raw top %v → %v (state %s): %s", h, now, prev, ids(top), list, st.String(), fmt.Sprintf(format, a...))
	}
	if len(list) > h.N || len(list) != len(top) {
		fail("length %d, want %d", len(list), len(top))
	}
	for i, id := range list {
		if slices.Index(list, id) != i {
			fail("%s twice", id)
		}
		if !w.ranked[id] {
			fail("%s is not ranked", id)
		}
		if w.drop[id] && indexMember(top, id) < 0 {
			fail("%s dropped out of the raw top but is shown", id)
		}
	}
	for _, m := range top {
		if m.Urgent && !slices.Contains(list, m.ID) {
			fail("urgent %s is kept waiting", m.ID)
		}
	}
	for i, id := range prev {
		if i < len(list) && slices.Contains(list, id) && list[i] != id && len(list) >= len(prev) {
			fail("%s moved from slot %d", id, i)
		}
	}
	for _, e := range st.Pending {
		if indexMember(top, e.ID) < 0 || slices.Contains(list, e.ID) || e.Since > now {
			fail("pending %v is not a waiting challenger", e)
		}
	}
	for _, e := range st.Out {
		if indexMember(top, e.ID) >= 0 || !slices.Contains(list, e.ID) || e.Since > now {
			fail("out %v is not a shown member out of the raw top", e)
		}
	}
	// Idempotent: the same step again changes nothing.
	again := *st
	again.Pending, again.Out = slices.Clone(st.Pending), slices.Clone(st.Out)
	if l := h.Step(nil, &again, list, w.standing(list), rw, now); !slices.Equal(l, list) || again.String() != st.String() {
		fail("stepping again gives %v %s", l, again.String())
	}
}

// TestHysteresisZeroIsRaw: without dwell, grace or margin the shown set is
// the raw top-N after every step, as with Merge.
func TestHysteresisZeroIsRaw(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	h := Hysteresis{N: 4, Margin: math.Inf(1)}
	w := newWorld(r)
	var list []string
	var st State
	for step := int64(0); step < 2000; step++ {
		w.change()
		rw := w.raw()
		list = h.Step(list, &st, slices.Clone(list), w.standing(list), rw, step)
		if top := ids(rw[:min(4, len(rw))]); !sameSet(list, top) {
			t.Fatalf("step %d: shown %v, raw top %v", step, list, top)
		}
		if !st.Empty() {
			t.Fatalf("step %d: timers %s without dwell or grace", step, st.String())
		}
	}
}

func ids(ms []Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func TestStateText(t *testing.T) {
	for _, s := range []State{
		{},
		{Pending: []Timer{{"u-1", 1763700000123}}},
		{Out: []Timer{{"guest.5:ios", 0}, {"U_8@web", 17}}},
		{Pending: []Timer{{"a", 1}, {"b", 2}}, Out: []Timer{{"c", 3}}},
	} {
		text := s.String()
		var got State
		if err := got.UnmarshalText([]byte(text)); err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if got.String() != text || len(got.Pending) != len(s.Pending) || len(got.Out) != len(s.Out) {
			t.Fatalf("%q read back as %+v", text, got)
		}
	}
	for _, bad := range []string{"2||", "1|", "1|a|b|c", "1|a|", "1|a=x|", "1|=5|", "1|a=1,a=2|", "1||b=-1", "x"} {
		var s State
		if err := s.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzStateText: text that parses encodes back to itself, or to nothing for
// the empty state; nothing panics.
func FuzzStateText(f *testing.F) {
	for _, s := range []string{"", "1||", "1|a=1|", "1|a=1,b=2|c=3", "1|x=9223372036854775807|", "2|||", "2|a=1||68,20", "2|||5", "2|a=1|b=2|"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var s State
		if err := s.UnmarshalText([]byte(text)); err != nil {
			return
		}
		if enc := s.String(); enc != text && !(s.Empty() && enc == "") {
			t.Fatalf("%q encodes back as %q", text, enc)
		}
	})
}

func BenchmarkHysteresis(b *testing.B) {
	h := Hysteresis{N: DefaultN, Dwell: time.Second, Grace: 2 * time.Second, Margin: 50}
	prev := []string{"a", "b", "c", "d", "e", "f", "g"}
	standing := ranked(prev)
	rw := raw("g", "x", "a", "c", "y", "e", "b", "z")
	st := State{Pending: make([]Timer, 0, DefaultN), Out: make([]Timer, 0, DefaultN)}
	dst := make([]string, 0, DefaultN)
	b.ReportAllocs()
	now := int64(0)
	for b.Loop() {
		now += 100
		st.Pending, st.Out = st.Pending[:0], st.Out[:0]
		dst = h.Step(dst, &st, prev, standing, rw, now)
	}
}

// TestStateTextShown: the flags of the listed members round-trip in the
// state's version 2 text; a version 1 text reads with no flags recorded.
func TestStateTextShown(t *testing.T) {
	s := State{Pending: []Timer{{"a", 5}}, Shown: []uint16{68, 0, 20}}
	if got := s.String(); got != "2|a=5||68,0,20" {
		t.Fatalf("String = %q", got)
	}
	var back State
	if err := back.UnmarshalText([]byte(s.String())); err != nil || !slices.Equal(back.Shown, s.Shown) || len(back.Pending) != 1 {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	if err := back.UnmarshalText([]byte("1|a=5|")); err != nil || back.Shown != nil {
		t.Fatalf("version 1: %+v, %v", back, err)
	}
	for _, bad := range []string{"2|a=5|", "2|||x", "2|||70000", "2|||1|2", "3|||"} {
		if err := back.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// Only flags, no timers: the state is kept (it is what republishes).
	if got := (&State{Shown: []uint16{4}}).String(); got != "2|||4" {
		t.Fatalf("flags only: %q", got)
	}
}
