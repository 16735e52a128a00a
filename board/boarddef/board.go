package boarddef

import (
	"math"
	"time"

	"github.com/rostrumhq/rostrum/codec"
)

// Board is a compiled board definition. It is immutable and safe for
// concurrent use.
type Board struct {
	name   string
	kind   Kind
	op     Op
	events uint32 // bit t set: events of codec.Type t are counted
	byRoom bool   // member is the room id (else the user id)
	one    bool   // count events instead of summing values
	grace  time.Duration

	// periodic
	unit      Unit
	loc       *time.Location
	weekStart time.Weekday
	retention int

	// settlement (periodic boards; board/settle.go)
	settle          bool
	settleTop       int
	settleRetention int

	// rolling and windows
	slice       time.Duration // the board's slice: the finest, dividing every window's
	windows     []int64       // slices per window, each of its own slice length
	wratio      []int64       // per window: its slice length / slice (1: the board's slices)
	windowNames []string      // "3m", "1h", … (rolling: the one window)
	epoch       time.Time

	// corrections and decimals (corrections.go)
	allowNeg bool
	floor    int64 // least total shown and ranked, in units of 1/scale
	noFloor  bool  // floor: none
	scale    int64 // 1, 10, 100 or 1000
	places   uint8 // decimal places of the scale: 0..3

	// decay (total boards; decay.go)
	halfLife time.Duration // 0: no decay

	// score layout
	firstReached bool
	res          time.Duration // first-reached resolution
	rb           int           // bits of the reached field (first-reached)
	maxTotal     int64         // largest total the score orders exactly
	// compact: the score holds the member state (a periodic first-reached
	// board at 1 ms); the member hash keeps only the members whose score
	// does not (docs/DESIGN.md §8 "Memory").
	compact bool
}

// Name returns the board's name.
func (b *Board) Name() string { return b.name }

// Kind returns the board's kind.
func (b *Board) Kind() Kind { return b.kind }

// Op returns how the board combines a member's events.
func (b *Board) Op() Op { return b.op }

// Unit returns a periodic board's period unit (0 for other kinds).
func (b *Board) Unit() Unit { return b.unit }

// Location returns a periodic board's time zone (nil for other kinds).
func (b *Board) Location() *time.Location { return b.loc }

// WeekStart returns the first day of a week board's weeks.
func (b *Board) WeekStart() time.Weekday { return b.weekStart }

// Retention returns how many past periods a periodic board keeps readable.
func (b *Board) Retention() int { return b.retention }

// Settles reports whether the board freezes and publishes its closed
// periods (board/settle.go).
func (b *Board) Settles() bool { return b.settle }

// SettleTop returns how many members a settled snapshot keeps.
func (b *Board) SettleTop() int { return b.settleTop }

// SettleRetention returns how many settled periods stay readable.
func (b *Board) SettleRetention() int { return b.settleRetention }

// Grace returns how long after its period or slice closes an event is
// still accepted.
func (b *Board) Grace() time.Duration { return b.grace }

// Slice returns a rolling or windows board's slice length (0 for periodic):
// on a windows board the finest, which every window's slice is a multiple
// of (WindowSliceLengths).
func (b *Board) Slice() time.Duration { return b.slice }

// Windows returns the names of a rolling or windows board's windows
// ("3m", "10m", "1h", …), shortest first; nil for a periodic board.
func (b *Board) Windows() []string { return append([]string(nil), b.windowNames...) }

// WindowSlices returns the number of slices of each window, shortest first,
// each counted in the window's own slice (WindowSliceLengths).
func (b *Board) WindowSlices() []int64 { return append([]int64(nil), b.windows...) }

// WindowSliceLengths returns the slice length of each window, shortest
// window first: the board's slice unless the window names its own.
func (b *Board) WindowSliceLengths() []time.Duration {
	out := make([]time.Duration, len(b.wratio))
	for j, q := range b.wratio {
		out[j] = time.Duration(q) * b.slice
	}
	return out
}

// NumWindows returns the number of windows of a rolling (1) or windows
// board; 0 for other kinds.
func (b *Board) NumWindows() int { return len(b.windows) }

// WindowRatio returns window j's slice length in board slices: 1 when the
// window keeps the board's slice.
func (b *Board) WindowRatio(j int) int64 { return b.wratio[j] }

// windowSliceMs returns window j's slice length in milliseconds.
func (b *Board) windowSliceMs(j int) int64 { return b.wratio[j] * b.slice.Milliseconds() }

// Epoch returns a rolling, windows or total board's first-reached origin
// (and a decay board's half-life origin).
func (b *Board) Epoch() time.Time { return b.epoch }

// FirstReached reports whether ties go to whoever reached the total first.
func (b *Board) FirstReached() bool { return b.firstReached }

// TieResolution returns the unit of the first-reached time (0 without tie).
func (b *Board) TieResolution() time.Duration { return b.res }

// ReachedBits returns the width of the score's first-reached field (0
// without tie); the total takes the 53-ReachedBits bits above it.
func (b *Board) ReachedBits() int { return b.rb }

// MaxTotal returns the largest total the score orders exactly.
func (b *Board) MaxTotal() int64 { return b.maxTotal }

// Horizon returns the last time a rolling or windows first-reached board
// can encode: Epoch + 2^ReachedBits × TieResolution. Zero for other boards.
func (b *Board) Horizon() time.Time {
	if b.kind == Periodic || !b.firstReached {
		return time.Time{}
	}
	return b.epoch.Add(time.Duration(1<<b.rb) * b.res)
}

// ScoreHoldsState reports whether the board keeps a member's total and
// reached time in its score alone (a periodic first-reached board at 1 ms
// resolution): its member hash holds only the members whose total is
// below the floor or beyond max-total.
func (b *Board) ScoreHoldsState() bool { return b.compact }

// Unscore returns the total and reached time (Unix ms) a first-reached
// score encodes, origin being the period start: exact for the members of a
// board whose score holds their state (ScoreHoldsState) that its member
// hash does not list.
func (b *Board) Unscore(score float64, origin int64) (total, reached int64) {
	s, r := int64(score), int64(1)<<b.rb
	t := floorDiv(s, r)
	return t, origin + (r-1-(s-t*r))*b.res.Milliseconds()
}

// RanksUsers reports whether the board ranks user ids (member: user_id);
// else it ranks room ids.
func (b *Board) RanksUsers() bool { return !b.byRoom }

// Counts reports whether the board counts events of type t.
func (b *Board) Counts(t codec.Type) bool { return t < 32 && b.events&(1<<t) != 0 }

// Events returns the event types the board counts.
func (b *Board) Events() []codec.Type {
	var out []codec.Type
	for t := codec.TypeGift; t <= codec.TypeTrade; t++ { // the counted types
		if b.Counts(t) {
			out = append(out, t)
		}
	}
	return out
}

// MemberOf returns who ev ranks on this board: its room id or its user id.
func (b *Board) MemberOf(ev *codec.Event) string {
	if b.byRoom {
		return ev.RoomID
	}
	return ev.UserID
}

// ValueOf returns what ev adds (incr) or sets (best, set): 1 for value:
// one boards, else the event's value.
func (b *Board) ValueOf(ev *codec.Event) int64 {
	if b.one {
		return 1
	}
	return ev.Value
}

// Window returns the index of the window named w ("" is the first, the
// shortest). A name that parses as a duration matches too ("3m0s").
func (b *Board) Window(w string) (int, bool) {
	if b.kind == Periodic || b.kind == Total {
		return 0, w == ""
	}
	if w == "" {
		return 0, true
	}
	for i, n := range b.windowNames {
		if n == w {
			return i, true
		}
	}
	if d, err := time.ParseDuration(w); err == nil {
		for i, n := range b.windows {
			if time.Duration(n*b.wratio[i])*b.slice == d {
				return i, true
			}
		}
	}
	return 0, false
}

// SliceOf returns the index of the slice holding Unix millisecond ms:
// floor(ms / slice), slices counted from 1970-01-01T00:00:00Z.
func (b *Board) SliceOf(ms int64) int64 { return floorDiv(ms, b.slice.Milliseconds()) }

// SliceStart returns the Unix millisecond at which slice s starts.
func (b *Board) SliceStart(s int64) int64 { return s * b.slice.Milliseconds() }

// ExpiredThrough returns, for window w, the last of its slices (counted in
// its own slice length g) that has left it at now (grace included): a slice
// s has left when now ≥ end of the last window that held it + grace, that
// is s ≤ floor((now-grace)/g) - slices(w).
func (b *Board) ExpiredThrough(w int, now time.Time) int64 {
	return floorDiv(now.Add(-b.grace).UnixMilli(), b.windowSliceMs(w)) - b.windows[w]
}

// LateAt returns when an event of Unix millisecond ms becomes late: for a
// periodic board its period's end + grace; for a rolling or windows board
// when its slice leaves the largest window + grace; for a decay board when
// the base passes its half-life (decay.go; a rolling decay board: whichever
// comes first). A total board without decay
// never finds an event late: the zero time.
func (b *Board) LateAt(ms int64) time.Time {
	switch {
	case b.kind == Periodic:
		return b.Period(time.UnixMilli(ms)).End.Add(b.grace)
	case b.kind == Total && b.halfLife > 0:
		return time.UnixMilli(b.DecayLateAt(b.HalfLifeOf(ms)))
	case b.kind == Total:
		return time.Time{}
	}
	// The window that keeps the event longest: the longest, unless a
	// shorter one with a coarser slice outlasts it.
	at := int64(math.MinInt64)
	for j, n := range b.windows {
		g := b.windowSliceMs(j)
		at = max(at, (floorDiv(ms, g)+n)*g)
	}
	at += b.grace.Milliseconds()
	if b.halfLife > 0 { // a rolling decay board: also when the base passes its half-life
		at = min(at, b.DecayLateAt(b.HalfLifeOf(ms)))
	}
	return time.UnixMilli(at)
}

// NextReset returns when the board next changes by time alone: the end of
// the current period, or the start of the next slice (when the oldest
// slice of each window leaves it, grace aside); the zero time for a total
// board, which never resets (a decay board's ranking never changes by time
// alone either: its values decay together).
func (b *Board) NextReset(now time.Time) time.Time {
	switch b.kind {
	case Periodic:
		return b.Period(now).End
	case Total:
		return time.Time{} // never
	}
	return time.UnixMilli(b.SliceStart(b.SliceOf(now.UnixMilli()) + 1)).UTC()
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
