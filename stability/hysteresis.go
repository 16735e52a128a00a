package stability

import "time"

// The hysteresis settings rostrum uses when none are configured: the
// processor, the command line and the flicker benchmark share them, and
// docs/STABILITY.md explains the choice.
const (
	DefaultDwell  = time.Second
	DefaultGrace  = 3 * time.Second
	DefaultMargin = 400 // volume steps
)

// Hysteresis is rostrum's stable strategy: the shown list follows the raw
// top-N only when a change is meant to last. A challenger (a member of the
// raw top-N that is not shown) replaces the weakest shown member that fell
// out of the raw top-N once it has held its place for Dwell, or at once when
// it beats that member's score by Margin or is Urgent (a host). A shown member
// that fell out of the raw top-N stays for up to Grace, unless a challenger
// replaces it first. A shown member that is no longer ranked at all (it left
// the room, or its role no longer takes part), or that is marked Drop (it
// muted while audio ranks first), leaves at once, and a free slot is filled
// at once with the best challenger: nothing that removes a member or fills
// an empty tile waits.
//
// Positions stay sticky as in Merge: a kept member keeps its slot and a
// newcomer takes the slot of the member it replaces.
//
// A Hysteresis is a value; its methods do not modify it and are safe for
// concurrent use.
type Hysteresis struct {
	// N is the list length; 0 means DefaultN.
	N int
	// Dwell is how long a challenger must stay in the raw top-N before it
	// replaces a shown member (milliseconds count; 0: at once).
	Dwell time.Duration
	// Grace is how long a shown member that fell out of the raw top-N stays
	// shown when no challenger replaces it earlier (milliseconds count).
	Grace time.Duration
	// Margin is the score lead over the weakest shown member out of the raw
	// top-N that lets a challenger replace it at once, in score units.
	// math.Inf(1) turns it off; 0 makes every challenger replace at once.
	Margin float64
}

// Member is a member of the raw top-N as the hysteresis sees it.
type Member struct {
	ID    string
	Score float64 // higher ranks higher
	// Urgent members are never kept waiting: a host enters at once.
	Urgent bool
}

// Standing is what the caller knows of a shown member now: its score, and
// whether it must leave at once when it is no longer in the raw top-N.
type Standing struct {
	Score float64 // current score; meaningful when Ranked
	// Ranked is false when the member is no longer in the ranking at all:
	// it left the room or its role became excluded. It leaves at once.
	Ranked bool
	// Drop makes a member that is out of the raw top-N leave at once, as
	// when it muted while audio is the score's leading field.
	Drop bool
}

// Timer is a member with the time (Unix ms, the decision clock) since which
// it has been a challenger (State.Pending) or out of the raw top-N while
// shown (State.Out).
type Timer struct {
	ID    string
	Since int64
}

// State is what the hysteresis remembers between steps, stored with the
// stable list it belongs to: the challengers waiting for their dwell, in raw
// order, and the shown members out of the raw top-N, in slot order. Both
// hold at most N entries.
type State struct {
	Pending []Timer
	Out     []Timer
	// Shown holds, slot by slot, the flags of the listed members as last
	// published (the caller's encoding; rostrum's processor packs a
	// member's spotlight, screen share, audio, video and role), so that a
	// change of them republishes the list even when no slot changes. nil:
	// not recorded (a state stored before they were).
	Shown []uint16
}

// Latest returns the newest time in s, or 0 when s is empty. The decision
// clock of a room never goes below it, so time spent waiting is never
// negative when events arrive out of order.
func (s *State) Latest() int64 {
	var t int64
	for _, e := range s.Pending {
		t = max(t, e.Since)
	}
	for _, e := range s.Out {
		t = max(t, e.Since)
	}
	return t
}

// Empty reports whether s holds no timers.
func (s *State) Empty() bool { return len(s.Pending) == 0 && len(s.Out) == 0 }

func (h *Hysteresis) n() int {
	if h.N <= 0 {
		return DefaultN
	}
	return h.N
}

// Next returns the earliest time (Unix ms) at which a step could change the
// list without any change of the raw top-N: a challenger's dwell or a shown
// member's grace ends. It returns 0 when s holds no timers. A caller that
// steps again at Next without new events makes time-based decisions happen
// on time.
func (h *Hysteresis) Next(s *State) int64 {
	var next int64
	at := func(t int64) {
		if next == 0 || t < next {
			next = t
		}
	}
	for _, e := range s.Pending {
		at(e.Since + h.Dwell.Milliseconds())
	}
	for _, e := range s.Out {
		at(e.Since + h.Grace.Milliseconds())
	}
	return next
}

// stepBuf is the size of the on-stack scratch arrays of Step: lists up to
// this long need no heap allocation.
const stepBuf = 16

// Step returns the new stable list at time now (Unix ms) and updates st.
//
// prev is the shown list (slot order) and st the state stored with it;
// standing[i] describes prev[i] (only read for members not in raw); raw is
// the raw top list, best first, of which the first N count. The result is
// appended to dst[:0]; it has min(N, len(raw)) members, no duplicates, holds
// every Urgent member of the raw top-N, and never a member that is not
// Ranked or is Drop and out of the raw top-N. Member ids must be unique
// within prev and within raw, and must not be empty.
//
// Step is a pure function of its arguments: the same prev, st, standing, raw
// and now give the same list and state. Stepping again at the same now with
// the returned list and state changes nothing.
func (h *Hysteresis) Step(dst []string, st *State, prev []string, standing []Standing, raw []Member, now int64) []string {
	N := h.n()
	n := min(N, len(raw))
	raw = raw[:n]
	full := n == N // otherwise raw holds every ranked member
	dwell, grace := h.Dwell.Milliseconds(), h.Grace.Milliseconds()

	dst = append(dst[:0], prev...)
	// Shown members out of the raw top-N that stay for now, by slot.
	var outBuf [stepBuf]Timer
	var outSlot [stepBuf]int
	var outScore [stepBuf]float64
	out, slots, scores := outBuf[:0], outSlot[:0], outScore[:0]
	for i, id := range dst {
		if indexMember(raw, id) >= 0 {
			continue
		}
		var s Standing
		if i < len(standing) {
			s = standing[i]
		}
		since := sinceOf(st.Out, id, now)
		if !s.Ranked || s.Drop || !full || i >= N || now-since >= grace {
			dst[i] = "" // leaves now; the slot is refilled below
			continue
		}
		out = append(out, Timer{ID: id, Since: since})
		slots = append(slots, i)
		scores = append(scores, s.Score)
	}

	// Challengers in raw order: first they fill free slots, at once; then
	// each that is ready replaces the weakest out member.
	var pendBuf [stepBuf]Timer
	pending := pendBuf[:0]
	free := 0 // next slot to look at for a hole
	for _, c := range raw {
		if indexString(prev, c.ID) >= 0 {
			continue
		}
		for free < len(dst) && dst[free] != "" {
			free++
		}
		if free < N {
			if free == len(dst) {
				dst = append(dst, c.ID)
			} else {
				dst[free] = c.ID
			}
			continue
		}
		since := sinceOf(st.Pending, c.ID, now)
		if w := weakest(scores); w >= 0 && (c.Urgent || now-since >= dwell || c.Score-scores[w] >= h.Margin) {
			dst[slots[w]] = c.ID
			out = remove(out, w)
			slots = remove(slots, w)
			scores = remove(scores, w)
			continue
		}
		pending = append(pending, Timer{ID: c.ID, Since: since})
	}

	// Close the holes that no challenger filled: members in slots past the
	// new length move down into them, keeping their order (as Merge does).
	dst = compact(dst)
	// A list longer than N (N was lowered) sheds its weakest out members.
	for len(dst) > N {
		w := weakest(scores)
		dst = removeString(dst, out[w].ID)
		out = remove(out, w)
		scores = remove(scores, w)
	}
	// Out members in slot order (slots moved, but their order did not).
	st.Pending = append(st.Pending[:0], pending...)
	st.Out = st.Out[:0]
	for _, id := range dst {
		if i := indexTimer(out, id); i >= 0 {
			st.Out = append(st.Out, out[i])
		}
	}
	return dst
}

// compact removes the empty slots of l: the members after the last filled
// prefix move down into the holes, keeping their relative order.
func compact(l []string) []string {
	k := 0
	for _, m := range l {
		if m != "" {
			k++
		}
	}
	// Members in slots >= k move into the holes below k, in order.
	j := k
	for i := 0; i < k; i++ {
		if l[i] != "" {
			continue
		}
		for l[j] == "" {
			j++
		}
		l[i], l[j] = l[j], ""
		j++
	}
	return l[:k]
}

// weakest returns the index of the lowest score (the last one among equals,
// so the member in the later slot goes first), or -1.
func weakest(scores []float64) int {
	w := -1
	for i, s := range scores {
		if w < 0 || s <= scores[w] {
			w = i
		}
	}
	return w
}

func remove[T any](s []T, i int) []T {
	return append(s[:i], s[i+1:]...)
}

func removeString(s []string, m string) []string {
	return remove(s, indexString(s, m))
}

func sinceOf(ts []Timer, id string, now int64) int64 {
	if i := indexTimer(ts, id); i >= 0 {
		return ts[i].Since
	}
	return now
}

func indexTimer(ts []Timer, id string) int {
	for i := range ts {
		if ts[i].ID == id {
			return i
		}
	}
	return -1
}

func indexMember(ms []Member, id string) int {
	for i := range ms {
		if ms[i].ID == id {
			return i
		}
	}
	return -1
}

func indexString(s []string, m string) int {
	for i, x := range s {
		if x == m {
			return i
		}
	}
	return -1
}
