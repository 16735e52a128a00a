package boarddef

import (
	"errors"
	"fmt"
	"math/bits"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rostrumhq/rostrum/codec"
)

// Compiling board configurations: validation, the 53-bit score layout of
// each board, periods and slices.

var nameRe = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)

// Compile validates every board and returns the compiled boards, in order.
// Errors name the field, e.g. "boards[1].slice: 7m does not divide a day".
// It checks unique names, the 53-bit score layout (total and first-reached
// time must fit; a rolling board's horizon must reach at least a year past
// now) and loads the IANA zones.
func Compile(cfgs []Config) ([]*Board, error) {
	return compile(cfgs, time.Now())
}

func compile(cfgs []Config, now time.Time) ([]*Board, error) {
	out := make([]*Board, 0, len(cfgs))
	seen := map[string]int{}
	for i := range cfgs {
		b, err := compileOne(&cfgs[i], now)
		if err != nil {
			return nil, fmt.Errorf("boards[%d].%w", i, err)
		}
		if j, dup := seen[b.name]; dup {
			return nil, fmt.Errorf("boards[%d].name: %q is already the name of boards[%d]", i, b.name, j)
		}
		seen[b.name] = i
		out = append(out, b)
	}
	return out, nil
}

// fieldErr is an error whose text starts with the field name, so that
// compile can prefix "boards[i].".
func fieldErr(field, format string, args ...any) error {
	return errors.New(field + ": " + fmt.Sprintf(format, args...))
}

func compileOne(c *Config, now time.Time) (*Board, error) {
	b := &Board{name: c.Name}
	if !nameRe.MatchString(c.Name) {
		return nil, fieldErr("name", "%q must be 1-64 characters of [a-z0-9-]", c.Name)
	}
	if len(c.Events) == 0 {
		return nil, fieldErr("events", "at least one event type is required (gift, score, received, read, passed, trade)")
	}
	valueless := ""
	for _, e := range c.Events {
		t, ok := codec.ParseType(e)
		if !ok || !t.Counted() {
			return nil, fieldErr("events", "%q is not a board event type (gift, score, received, read, passed, trade)", e)
		}
		if b.events&(1<<t) != 0 {
			return nil, fieldErr("events", "%q is listed twice", e)
		}
		b.events |= 1 << t
		if t == codec.TypeReceived || t == codec.TypeRead || t == codec.TypePassed {
			valueless = e
		}
	}
	switch c.Member {
	case "room_id":
		b.byRoom = true
	case "user_id":
	default:
		return nil, fieldErr("member", "%q must be room_id or user_id", c.Member)
	}
	switch c.Value {
	case "", "value":
		if valueless != "" {
			return nil, fieldErr("value", "%s events carry no value; count them with value: one", valueless)
		}
	case "one":
		b.one = true
	default:
		return nil, fieldErr("value", "%q must be value or one", c.Value)
	}
	switch c.Op {
	case "", "incr":
		b.op = Incr
	case "best":
		b.op = Best
	case "set":
		b.op = Set
	default:
		return nil, fieldErr("op", "%q must be incr, best or set", c.Op)
	}
	switch c.Kind {
	case "periodic":
		b.kind = Periodic
	case "rolling":
		b.kind = Rolling
	case "windows":
		b.kind = Windows
	case "total":
		b.kind = Total
	default:
		return nil, fieldErr("kind", "%q must be periodic, rolling, windows or total", c.Kind)
	}
	if b.op != Incr && b.kind != Periodic && b.kind != Total {
		return nil, fieldErr("op", "%s needs kind periodic or total: a rolling window can only subtract what incr added", b.op)
	}
	b.grace = DefaultGrace
	if c.Grace != nil {
		if *c.Grace < 0 {
			return nil, fieldErr("grace", "%s must not be negative", *c.Grace)
		}
		b.grace = *c.Grace
	}
	var err error
	switch b.kind {
	case Periodic:
		err = b.compilePeriodic(c)
	case Total:
		err = b.compileTotal(c)
	default:
		err = b.compileRolling(c)
	}
	if err != nil {
		return nil, err
	}
	if err := b.compileTie(c, now); err != nil {
		return nil, err
	}
	if err := b.compileCorrections(c); err != nil {
		return nil, err
	}
	if err := b.compileDecay(c); err != nil {
		return nil, err
	}
	// At 1 ms the score holds the exact reached time of a periodic board;
	// coarser, a set board could not tell a newer event of the same unit.
	b.compact = b.kind == Periodic && b.firstReached && b.res == time.Millisecond
	return b, nil
}

func (b *Board) compilePeriodic(c *Config) error {
	switch {
	case c.Slice != 0:
		return fieldErr("slice", "only rolling and windows boards have slices")
	case c.Slices != 0:
		return fieldErr("slices", "only rolling boards have slices")
	case len(c.Windows) != 0:
		return fieldErr("windows", "only windows boards have windows")
	case !c.Epoch.IsZero():
		return fieldErr("epoch", "periodic boards count first-reached time from the start of each period; epoch is for rolling and windows boards")
	}
	switch c.Period {
	case "hour":
		b.unit = Hour
	case "day":
		b.unit = Day
	case "week":
		b.unit = Week
	case "month":
		b.unit = Month
	default:
		return fieldErr("period", "%q must be hour, day, week or month", c.Period)
	}
	b.weekStart = time.Monday
	if c.WeekStart != "" {
		if b.unit != Week {
			return fieldErr("week-start", "only week boards have a week start")
		}
		ws, ok := parseWeekday(c.WeekStart)
		if !ok {
			return fieldErr("week-start", "%q must be a day name (monday … sunday)", c.WeekStart)
		}
		b.weekStart = ws
	}
	b.loc = time.UTC
	if c.TZ != "" {
		loc, err := time.LoadLocation(c.TZ)
		if err != nil || c.TZ == "Local" {
			return fieldErr("tz", "%q is not an IANA time zone name (e.g. Asia/Shanghai, Europe/Berlin, UTC)", c.TZ)
		}
		b.loc = loc
	}
	b.retention = DefaultRetention
	switch {
	case c.Retention < 0:
		return fieldErr("retention", "%d must not be negative", c.Retention)
	case c.Retention > 10000:
		return fieldErr("retention", "%d periods is more than 10000", c.Retention)
	case c.Retention > 0:
		b.retention = c.Retention
	}
	if b.grace >= b.unit.minSpan() {
		return fieldErr("grace", "%s must be shorter than one %s", b.grace, b.unit)
	}
	switch c.Settle {
	case "", "true":
		b.settle = true
	case "false":
	case "daily":
		return fieldErr("settle", "daily is for rolling and windows boards; a periodic board settles each period (true or false)")
	default:
		return fieldErr("settle", "%q must be true or false", c.Settle)
	}
	b.settleTop, b.settleRetention = DefaultSettleTop, DefaultSettleRetention
	switch {
	case c.SettleTop < 0 || c.SettleTop > MaxSettleTop:
		return fieldErr("settle-top", "%d must be between 1 and %d", c.SettleTop, MaxSettleTop)
	case c.SettleTop > 0:
		b.settleTop = c.SettleTop
	}
	switch {
	case c.SettleRetention < 0 || c.SettleRetention > 10000:
		return fieldErr("settle-retention", "%d must be between 1 and 10000 periods", c.SettleRetention)
	case c.SettleRetention > 0:
		b.settleRetention = c.SettleRetention
	}
	if !b.settle && (c.SettleTop != 0 || c.SettleRetention != 0) {
		return fieldErr("settle-top", "the board does not settle (settle: false)")
	}
	return nil
}

func (b *Board) compileRolling(c *Config) error {
	switch {
	case c.Period != "":
		return fieldErr("period", "only periodic boards have a period")
	case c.WeekStart != "":
		return fieldErr("week-start", "only periodic week boards have a week start")
	case c.TZ != "":
		return fieldErr("tz", "rolling and windows slices are aligned to UTC; tz is for periodic boards")
	case c.Retention != 0:
		return fieldErr("retention", "only periodic boards keep past periods")
	case c.Settle == "daily":
		return fieldErr("settle", "daily snapshots of rolling boards are not built yet")
	case c.Settle != "" && c.Settle != "false":
		return fieldErr("settle", "%q: only periodic boards settle their periods", c.Settle)
	case c.SettleTop != 0 || c.SettleRetention != 0:
		return fieldErr("settle-top", "only periodic boards settle their periods")
	}
	slice := c.Slice
	if slice == 0 && b.kind == Windows && len(c.Windows) > 0 {
		// Every window names its slice: the board's is the shortest.
		for _, w := range c.Windows {
			if w.Slice == 0 {
				slice = 0
				break
			}
			if slice == 0 || w.Slice < slice {
				slice = w.Slice
			}
		}
	}
	if slice == 0 {
		if b.kind == Windows {
			return fieldErr("slice", "is required unless every window names its own slice ({length: 24h, slice: 1h})")
		}
		return fieldErr("slice", "is required: the slice length, 1m..24h, dividing a day")
	}
	if err := checkSlice("slice", slice); err != nil {
		return err
	}
	b.slice = slice
	if b.kind == Rolling {
		if len(c.Windows) != 0 {
			return fieldErr("windows", "a rolling board has one window of slices; use kind: windows for several")
		}
		if c.Slices < 1 || c.Slices > 100000 {
			return fieldErr("slices", "%d must be between 1 and 100000", c.Slices)
		}
		b.windows, b.wratio = []int64{int64(c.Slices)}, []int64{1}
	} else {
		if c.Slices != 0 {
			return fieldErr("slices", "a windows board lists its windows under windows:")
		}
		if len(c.Windows) == 0 || len(c.Windows) > 16 {
			return fieldErr("windows", "1 to 16 windows are required, got %d", len(c.Windows))
		}
		var prev time.Duration
		for j, w := range c.Windows {
			ws := w.Slice
			if ws == 0 {
				ws = b.slice
			} else {
				field := fmt.Sprintf("windows[%d].slice", j)
				if err := checkSlice(field, ws); err != nil {
					return err
				}
				if ws%b.slice != 0 {
					return fieldErr(field, "%s is not a multiple of the board's slice %s", fmtDur(ws), fmtDur(b.slice))
				}
			}
			if w.Length <= 0 || w.Length%ws != 0 {
				return fieldErr("windows", "%s is not a multiple of the slice %s", fmtDur(w.Length), fmtDur(ws))
			}
			n := int64(w.Length / ws)
			if n > 100000 {
				return fieldErr("windows", "%s is more than 100000 slices", fmtDur(w.Length))
			}
			if j > 0 && w.Length <= prev {
				return fieldErr("windows", "%s must be longer than the window before it", fmtDur(w.Length))
			}
			prev = w.Length
			b.windows = append(b.windows, n)
			b.wratio = append(b.wratio, int64(ws/b.slice))
		}
	}
	for j, n := range b.windows {
		b.windowNames = append(b.windowNames, fmtDur(time.Duration(n*b.wratio[j])*b.slice))
	}
	b.epoch = codec.DefaultEpoch // the origin of rolling and windows boards' slices
	if !c.Epoch.IsZero() {
		b.epoch = c.Epoch.UTC()
	}
	if b.epoch.UnixMilli()%b.slice.Milliseconds() != 0 {
		return fieldErr("epoch", "%s is not at a slice boundary (slices are aligned to 00:00 UTC)", b.epoch.Format(time.RFC3339))
	}
	return nil
}

func (b *Board) compileTie(c *Config, now time.Time) error {
	switch c.Tie {
	case "", "none":
	case "first-reached":
		b.firstReached = true
	default:
		return fieldErr("tie", "%q must be first-reached or none", c.Tie)
	}
	if c.MaxTotal < 0 {
		return fieldErr("max-total", "%d must be positive", c.MaxTotal)
	}
	if !b.firstReached {
		if c.TieResolution != 0 {
			return fieldErr("tie-resolution", "only first-reached boards have a tie resolution")
		}
		b.maxTotal = codec.MaxAmount
		if c.MaxTotal > 0 {
			if c.MaxTotal > codec.MaxAmount {
				return fieldErr("max-total", "%d is more than 2^53-1, the largest total a Redis score holds exactly", c.MaxTotal)
			}
			b.maxTotal = c.MaxTotal
		}
		return nil
	}
	b.res = c.TieResolution
	if b.res == 0 {
		b.res = time.Millisecond
		if b.kind != Periodic {
			b.res = time.Second
		}
	}
	if b.res < time.Millisecond || b.res%time.Millisecond != 0 {
		return fieldErr("tie-resolution", "%s must be a whole number of milliseconds", b.res)
	}
	// span: how far after its origin a reached time may fall.
	var span time.Duration
	if b.kind == Periodic {
		span = b.unit.MaxSpan()
	} else {
		span = defaultRollingSpan
	}
	need := bitsFor(uint64((span + b.res - 1) / b.res))
	if c.MaxTotal == 0 {
		if need >= codec.MaxBits {
			return fieldErr("tie-resolution", "%s leaves no bit of the 53-bit score for the total (the reached time needs %d bits)", b.res, need)
		}
		b.rb = need
		b.maxTotal = 1<<(codec.MaxBits-need) - 1
	} else {
		tb := bits.Len64(uint64(c.MaxTotal)) // holds 0..MaxTotal
		// A periodic board's reached field must span its longest period; a
		// rolling board's span is its horizon, checked below.
		if (b.kind == Periodic && tb+need > codec.MaxBits) || tb >= codec.MaxBits {
			return fieldErr("max-total", "%d needs %d bits and the reached time at %s needs %d, more than the %d bits a Redis score holds exactly (lower max-total or coarsen tie-resolution)",
				c.MaxTotal, tb, b.res, need, codec.MaxBits)
		}
		b.rb = codec.MaxBits - tb
		b.maxTotal = c.MaxTotal
	}
	if b.kind != Periodic {
		horizon := b.Horizon()
		if horizon.Before(now.AddDate(1, 0, 0)) {
			return fieldErr("max-total", "the first-reached layout ends at %s (epoch + 2^%d × %s), within a year: lower max-total, coarsen tie-resolution or move epoch",
				horizon.UTC().Format(time.RFC3339), b.rb, b.res)
		}
	}
	// The layout itself is codec's, so its checks apply too.
	if _, err := codec.NewFirstReached(uint8(codec.MaxBits - b.rb)); err != nil {
		return fieldErr("max-total", "%v", err)
	}
	return nil
}

// checkSlice checks a slice length: 1m..24h, whole seconds, dividing a day.
func checkSlice(field string, d time.Duration) error {
	if d < time.Minute || d > 24*time.Hour {
		return fieldErr(field, "%s must be between 1m and 24h", fmtDur(d))
	}
	if d%time.Second != 0 || (24*time.Hour)%d != 0 {
		return fieldErr(field, "%s does not divide a day", fmtDur(d))
	}
	return nil
}

// bitsFor returns the number of bits needed to hold every value in [0, n).
func bitsFor(n uint64) int {
	if n <= 1 {
		return 1
	}
	return bits.Len64(n - 1)
}

// minSpan is the shortest a period of u lasts in any zone (DST included):
// a board's grace must be shorter.
func (u Unit) minSpan() time.Duration {
	switch u {
	case Hour:
		return 30 * time.Minute
	case Day:
		return 22 * time.Hour
	case Week:
		return 7*24*time.Hour - 2*time.Hour
	}
	return 28*24*time.Hour - 2*time.Hour
}

// MaxSpan is the longest a period of u lasts in any zone (DST included):
// the bound of the search for a period's start and end, of the reached
// time a first-reached score holds, and of how long the state kept for a
// number of periods lasts.
func (u Unit) MaxSpan() time.Duration {
	switch u {
	case Hour:
		return 2 * time.Hour // a wall-clock hour repeated when clocks go back
	case Day:
		return 26 * time.Hour
	case Week:
		return 7*24*time.Hour + 2*time.Hour
	}
	return 31*24*time.Hour + 2*time.Hour
}

var weekdays = []string{"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"}

func parseWeekday(s string) (time.Weekday, bool) {
	i := slices.Index(weekdays, strings.ToLower(s))
	return time.Weekday(i), i >= 0
}

// fmtDur formats a duration the way configurations write it: 90s, 3m, 6h,
// 24h, 1h30m.
func fmtDur(d time.Duration) string {
	if d <= 0 || d%time.Second != 0 {
		return d.String()
	}
	var sb strings.Builder
	h, m, s := d/time.Hour, (d%time.Hour)/time.Minute, (d%time.Minute)/time.Second
	if h > 0 {
		fmt.Fprintf(&sb, "%dh", h)
	}
	if m > 0 {
		fmt.Fprintf(&sb, "%dm", m)
	}
	if s > 0 {
		fmt.Fprintf(&sb, "%ds", s)
	}
	return sb.String()
}
