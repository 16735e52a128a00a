package boarddef

import (
	"time"
)

// Config is one board as written in YAML under boards: (docs/DESIGN.md §8). Zero
// values take the defaults noted; Compile validates and compiles it.
type Config struct {
	Name   string   `yaml:"name"`   // [a-z0-9-]+, 1..64 bytes, unique; required
	Events []string `yaml:"events"` // event types counted: gift, score, received, read, passed, trade; required
	Member string   `yaml:"member"` // room_id | user_id: who is ranked; required
	Value  string   `yaml:"value"`  // value | one (count events); default value
	Op     string   `yaml:"op"`     // incr | best | set (best and set: periodic boards only); default incr
	Kind   string   `yaml:"kind"`   // periodic | rolling | windows | total; required

	// Rolling and windows boards. Slices are aligned to UTC: a slice
	// divides a day, so every day starts a slice at 00:00 UTC.
	//
	// Slice is the slice length, 1m..24h, dividing a day: required, except
	// on a windows board whose every window names its own slice (then the
	// shortest of them). A window without a slice of its own keeps the
	// board's.
	Slice   time.Duration `yaml:"slice"`
	Slices  int           `yaml:"slices"`  // rolling: window = the current slice and the slices-1 before it; required
	Windows []Window      `yaml:"windows"` // windows: 1..16, ascending lengths; required

	// Periodic boards.
	Period    string `yaml:"period"`     // hour | day | week | month; required
	WeekStart string `yaml:"week-start"` // first day of a week (monday … sunday); default monday
	TZ        string `yaml:"tz"`         // IANA zone whose calendar (DST included) cuts the periods; default UTC
	Retention int    `yaml:"retention"`  // past periods kept readable; default 8

	Tie string `yaml:"tie"` // first-reached | none; default none

	// Grace is how long after its period (or, for rolling boards, its
	// slice's last window) closes an event is still accepted; later it is
	// late. nil: 1m. Rolling boards also subtract an expired slice only
	// once its grace has passed.
	Grace *time.Duration `yaml:"grace"`
	// TieResolution is the unit of the first-reached time in the score:
	// events reached within one unit tie on time. Default 1ms for periodic
	// boards, 1s for rolling and windows boards.
	TieResolution time.Duration `yaml:"tie-resolution"`
	// MaxTotal is the largest total the score orders exactly; a larger total
	// is still stored exactly but ranks as MaxTotal (and is counted as
	// saturated). Default: the largest the 53-bit layout leaves room for.
	MaxTotal int64 `yaml:"max-total"`
	// Epoch is the origin of a rolling or windows board's first-reached
	// time: the board works until Epoch + 2^reachedBits × TieResolution.
	// Default 2025-01-01T00:00:00Z. Changing it reorders stored scores.
	Epoch time.Time `yaml:"epoch"`

	// Settle freezes every closed period of a periodic board into a
	// snapshot and publishes it once on {env}.boards.settled (board/settle.go):
	// "" or "true" (periodic default), "false" (off), "daily" (rolling and
	// windows boards: a snapshot of the first window at every 00:00 UTC;
	// not yet built, refused).
	Settle string `yaml:"settle"`
	// SettleTop is how many members a settled snapshot keeps, 1..10000;
	// default 1000.
	SettleTop int `yaml:"settle-top"`
	// SettleRetention is how many settled periods stay readable; default 52.
	SettleRetention int `yaml:"settle-retention"`

	// Corrections (corrections.go, docs/DESIGN.md §8 "Corrections").
	//
	// AllowNegative accepts negative values (refunds, penalties) on an
	// incr board; without it a negative value sends its record to the DLQ.
	AllowNegative bool `yaml:"allow-negative"`
	// Floor is the least total a member shows and ranks with: the sum is
	// kept exactly and the total is max(sum, floor). A number in the
	// board's unit (decimals allowed up to its scale), or "none" for no
	// floor; default 0. Only with allow-negative.
	Floor string `yaml:"floor"`
	// Scale makes a board count in tenths, hundredths or thousandths:
	// values are JSON numbers that are exact multiples of 1/scale, stored
	// as integers of 1/scale and read back as decimals. 1, 10, 100 or
	// 1000; default 1 (integers only).
	Scale int64 `yaml:"scale"`

	// Decay ranks a total board by a score that halves every half-life
	// (decay.go, docs/DESIGN.md §8 "Decay"); nil: no decay.
	Decay *Decay `yaml:"decay"`
}

// Window is one window of a windows board, written in YAML as its length
// ("3m") or as {length: 24h, slice: 1h}. A window keeps slices of its own
// length, so a long window need not keep a short window's many slices: it
// gives up precision instead (its first slice leaves it whole, up to one
// slice early or late), and stays exact at its own slice.
type Window struct {
	Length time.Duration `yaml:"length"` // a multiple of Slice; required
	// Slice is the window's slice: 1m..24h, dividing a day, a multiple of
	// the board's slice. 0: the board's slice.
	Slice time.Duration `yaml:"slice"`
}

// UnmarshalYAML reads a window written as a duration ("10m") or as a
// mapping ({length: 24h, slice: 1h}).
func (w *Window) UnmarshalYAML(unmarshal func(any) error) error {
	var raw any
	if err := unmarshal(&raw); err != nil {
		return err
	}
	if _, ok := raw.(map[string]any); ok {
		type plain Window // without this method
		return unmarshal((*plain)(w))
	}
	*w = Window{}
	return unmarshal(&w.Length)
}

// Lengths returns windows of the given lengths, each keeping the board's
// slice: Windows: boarddef.Lengths(3*time.Minute, time.Hour).
func Lengths(ds ...time.Duration) []Window {
	out := make([]Window, len(ds))
	for i, d := range ds {
		out[i].Length = d
	}
	return out
}

// Decay is a board's decay: {half-life: 7d}.
type Decay struct {
	// HalfLife is the time after which an event counts half: "7d", "36h",
	// "90m"; 1h … 3650d; required.
	HalfLife string `yaml:"half-life"`
}

// Kind is how a board cuts time.
type Kind uint8

// The board kinds.
const (
	Periodic Kind = iota + 1 // calendar periods (hour, day, week, month) in a zone
	Rolling                  // one window of the last N slices
	Windows                  // several windows over the same slices
	Total                    // one ranking that never resets (all time)
)

// String returns "periodic", "rolling", "windows" or "total".
func (k Kind) String() string {
	switch k {
	case Periodic:
		return "periodic"
	case Rolling:
		return "rolling"
	case Windows:
		return "windows"
	case Total:
		return "total"
	}
	return "unknown"
}

// Op is how a board combines a member's events into its total.
type Op uint8

// The operators.
const (
	Incr Op = iota + 1 // total = sum of values; reached_at = newest counted event time
	Best               // total = largest value; reached_at = earliest time it was reached
	Set                // total = value of the newest event (ties: the larger value); reached_at = its time
)

// String returns "incr", "best" or "set": the configuration's spelling.
func (o Op) String() string {
	switch o {
	case Incr:
		return "incr"
	case Best:
		return "best"
	case Set:
		return "set"
	}
	return "unknown"
}

// Unit is the calendar unit of a periodic board.
type Unit uint8

// The period units.
const (
	Hour Unit = iota + 1
	Day
	Week
	Month
)

// String returns "hour", "day", "week" or "month".
func (u Unit) String() string {
	switch u {
	case Hour:
		return "hour"
	case Day:
		return "day"
	case Week:
		return "week"
	case Month:
		return "month"
	}
	return "unknown"
}

// Defaults.
const (
	DefaultRetention = 8
	// DefaultSettleTop and MaxSettleTop bound the members of a settled
	// snapshot; DefaultSettleRetention is how many settled periods are kept.
	DefaultSettleTop       = 1000
	MaxSettleTop           = 10000
	DefaultSettleRetention = 52
	DefaultGrace           = time.Minute
	// defaultRollingSpan is the span of a rolling board's reached field
	// when max-total is not given: 2^30 s, about 34 years after the epoch.
	defaultRollingSpan = time.Duration(1<<30) * time.Second
)
