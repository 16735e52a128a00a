package boarddef

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rostrumhq/rostrum/codec"
)

// Total boards, and decay on total and rolling boards: their validation
// and the formulas' pure parts; the sums and the base live in Redis
// (board/decay.go, lua/decay.lua of package board). The formulas (the
// weights W(ts) = M(r)·2^(h−k), the base k and its rebase, what is
// rounded and why the sums stay exact) have one home: docs/DESIGN.md §8
// "Total boards and decay" and "Rolling boards with decay". What the code
// here must keep, at the point of use:
//
//   - A weight's mantissa (DecayWeight) is at most 2^21 and a decay
//     board's values at most 2^29 − 1 (its max-total), so a weighted value
//     stays below 2^50.
//   - Late: below the base, or (rolling) its slice left the window plus
//     grace (DecayLateAt, LateAt); Batch.Add refuses by record time, the
//     script again by the base.
//   - Windows boards do not decay and decay boards do not settle daily
//     (refused at start-up).

const (
	// decayBits is F: the weight mantissa's fractional bits.
	decayBits = 20
	// maxDecayTotal is the largest max-total of a decay board.
	maxDecayTotal = 1<<29 - 1
)

func (b *Board) compileTotal(c *Config) error {
	switch {
	case c.Period != "":
		return fieldErr("period", "only periodic boards have a period; a total board never resets")
	case c.WeekStart != "":
		return fieldErr("week-start", "only periodic week boards have a week start")
	case c.TZ != "":
		return fieldErr("tz", "only periodic boards have a time zone")
	case c.Retention != 0:
		return fieldErr("retention", "only periodic boards keep past periods")
	case c.Slice != 0:
		return fieldErr("slice", "only rolling and windows boards have slices")
	case c.Slices != 0:
		return fieldErr("slices", "only rolling boards have slices")
	case len(c.Windows) != 0:
		return fieldErr("windows", "only windows boards have windows")
	case c.Settle != "" && c.Settle != "false":
		return fieldErr("settle", "%q: a total board has no period to settle", c.Settle)
	case c.SettleTop != 0 || c.SettleRetention != 0:
		return fieldErr("settle-top", "only periodic boards settle their periods")
	}
	b.epoch = codec.DefaultEpoch
	if !c.Epoch.IsZero() {
		b.epoch = c.Epoch.UTC()
	}
	return nil
}

// compileDecay validates decay: total and rolling boards only, incr, no
// first-reached ties, floor 0 or none, max-total within maxDecayTotal; on
// a rolling board a half-life of whole slices, and no daily settlement.
func (b *Board) compileDecay(c *Config) error {
	if c.Decay == nil {
		return nil
	}
	switch {
	case b.kind == Windows:
		// Each window subtracts its own slices, so a rebase would have to
		// rebuild every window's sums from the slices it still holds.
		return fieldErr("decay", "windows boards do not decay: a rebase would rebuild every window from its slices; use one rolling board per window (kind: rolling) or kind: total")
	case b.kind != Total && b.kind != Rolling:
		return fieldErr("decay", "only total and rolling boards decay (a periodic board resets instead)")
	case c.Settle == "daily":
		// A decay board's values change with the clock: a day's snapshot
		// would freeze a value that is only true at one instant.
		return fieldErr("settle", "a decay board does not settle: its values change with the clock")
	case b.op != Incr:
		return fieldErr("decay", "only incr boards decay (op is %s)", b.op)
	case b.firstReached:
		return fieldErr("tie", "a decay board ranks by its decayed sum, which rarely ties: tie: first-reached is not available")
	case b.floor != 0:
		return fieldErr("floor", "a decay board's floor is 0 or none")
	}
	h, err := parseHalfLife(c.Decay.HalfLife)
	if err != nil {
		return fieldErr("decay.half-life", "%v", err)
	}
	if b.kind == Rolling && h%b.slice != 0 {
		// Each slice then lies in one half-life, so its events share
		// the power of two of their weights (h − k).
		return fieldErr("decay.half-life", "%s is not a whole number of slices (%s): each slice must lie within one half-life", c.Decay.HalfLife, fmtDur(b.slice))
	}
	b.halfLife = h
	if c.MaxTotal > maxDecayTotal {
		return fieldErr("max-total", "%d is more than %d, the largest total a decay board keeps exactly (2^29 − 1)", c.MaxTotal, maxDecayTotal)
	}
	b.maxTotal = maxDecayTotal
	if c.MaxTotal > 0 {
		b.maxTotal = c.MaxTotal
	}
	return nil
}

// parseHalfLife reads "7d", "36h", "90m", "1h30m": 1h … 3650d, a whole
// number of seconds.
func parseHalfLife(s string) (time.Duration, error) {
	var d time.Duration
	if n, ok := strings.CutSuffix(strings.TrimSpace(s), "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil {
			return 0, fmt.Errorf("%q must be a number of days (7d) or a duration (36h)", s)
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(strings.TrimSpace(s)); err != nil {
			return 0, fmt.Errorf("%q must be a number of days (7d) or a duration (36h)", s)
		}
	}
	if d < time.Hour || d > 3650*24*time.Hour || d%time.Second != 0 {
		return 0, fmt.Errorf("%s must be a whole number of seconds between 1h and 3650d", s)
	}
	return d, nil
}

// HalfLife returns a decay board's half-life; 0 without decay.
func (b *Board) HalfLife() time.Duration { return b.halfLife }

// HalfLifeOf returns the half-life index h of a decay board's Unix ms ts:
// floor((ts − epoch)/H).
func (b *Board) HalfLifeOf(ts int64) int64 {
	return floorDiv(ts-b.epoch.UnixMilli(), b.halfLife.Milliseconds())
}

// DecayWeight returns M(r) for Unix ms ts: round(2^20·2^(r/H)), the
// mantissa of the weight an event of ts is counted with.
func (b *Board) DecayWeight(ts int64) int64 {
	H := b.halfLife.Milliseconds()
	r := ts - b.epoch.UnixMilli() - b.HalfLifeOf(ts)*H
	return int64(math.Round(math.Ldexp(math.Exp2(float64(r)/float64(H)), decayBits)))
}

// DecayTarget is the base a decay board moves to at now: floor((now −
// grace − epoch)/H) − 1.
func (b *Board) DecayTarget(now time.Time) int64 {
	return floorDiv(now.Add(-b.grace).UnixMilli()-b.epoch.UnixMilli(), b.halfLife.Milliseconds()) - 1
}

// DecayLateAt is when an event of half-life index h (HalfLifeOf) becomes
// late: when the base target passes h.
func (b *Board) DecayLateAt(h int64) int64 {
	return b.epoch.UnixMilli() + (h+2)*b.halfLife.Milliseconds() + b.grace.Milliseconds()
}

// Decayed returns the value, in units of 1/Scale, of the decayed sum s of a
// board with base k, at now: s / (2^20 · 2^((now − t0)/H)) rounded half away
// from zero, t0 = epoch + k·H.
func (b *Board) Decayed(s, k int64, now time.Time) int64 {
	H := b.halfLife.Milliseconds()
	t0 := b.epoch.UnixMilli() + k*H
	x := float64(now.UnixMilli()-t0) / float64(H)
	return int64(math.Round(math.Ldexp(float64(s), -decayBits) * math.Exp2(-x)))
}

// FormatHalfLife writes a half-life as configurations do: "7d" for whole
// days, else "36h", "90m".
func FormatHalfLife(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return fmtDur(d)
}
