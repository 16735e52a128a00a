package boarddef

import (
	"fmt"
	"strconv"
	"time"
)

// Period is one calendar period of a periodic board: [Start, End) in the
// board's zone, and its label as docs/DESIGN.md §8 writes it: "2026-11-22T13"
// (hour), "2026-11-22" (day), "2026-W47" (week), "2026-11" (month).
//
// A period is its label: when clocks go back, the repeated wall-clock hour
// is one hour period of two hours; when they go forward, the skipped hour
// has no period. Days, weeks and months simply become 23 or 25 hours (or
// a day, week or month that much) shorter or longer.
type Period struct {
	Label      string
	Start, End time.Time
	key        int64 // monotone in time: see periodKey
}

// Key numbers the period among its board's periods: it never decreases
// with time, and two instants share a period exactly when they share its
// key. A rolling or windows board's "period" is a slice, whose key is its
// index (SliceOf).
func (p Period) Key() int64 { return p.key }

// Period returns the period of a periodic board holding t. For a rolling or
// windows board it returns the slice holding t, with an empty label; for a
// total board (no periods) the zero Period.
func (b *Board) Period(t time.Time) Period {
	if b.kind == Total {
		return Period{}
	}
	if b.kind != Periodic {
		s := b.SliceOf(t.UnixMilli())
		return Period{Start: time.UnixMilli(b.SliceStart(s)).UTC(), End: time.UnixMilli(b.SliceStart(s + 1)).UTC(), key: s}
	}
	k := b.periodKey(t)
	ms := t.UnixMilli()
	span := b.unit.MaxSpan().Milliseconds()
	// Keys never decrease with time, so binary search finds the first
	// millisecond with key k (the start) and the first with a greater key
	// (the end), whatever the zone's DST rules do to the wall clock.
	lo, hi := ms-span, ms // key(lo) < k, key(hi) == k
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if b.periodKey(time.UnixMilli(mid)) < k {
			lo = mid
		} else {
			hi = mid
		}
	}
	start := hi
	lo, hi = ms, ms+span // key(lo) == k, key(hi) > k
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if b.periodKey(time.UnixMilli(mid)) > k {
			hi = mid
		} else {
			lo = mid
		}
	}
	return Period{Label: b.label(t), Start: time.UnixMilli(start).In(b.loc), End: time.UnixMilli(hi).In(b.loc), key: k}
}

// periodKey numbers the periods of b: local days since 1970-01-01 (day),
// times 24 plus the local hour (hour), the local day of the week's first
// day (week), or months since year 0 (month). It never decreases with time
// in any zone whose clocks go back by less than a period.
func (b *Board) periodKey(t time.Time) int64 {
	lt := t.In(b.loc)
	y, m, d := lt.Date()
	days := civilDays(y, m, d)
	switch b.unit {
	case Hour:
		return days*24 + int64(lt.Hour())
	case Day:
		return days
	case Week:
		return days - int64((int(lt.Weekday())-int(b.weekStart)+7)%7)
	}
	return int64(y)*12 + int64(m) - 1
}

// index numbers periods consecutively (a week key steps by 7).
func (b *Board) index(key int64) int64 {
	if b.unit == Week {
		return floorDiv(key, 7)
	}
	return key
}

func (b *Board) label(t time.Time) string {
	lt := t.In(b.loc)
	switch b.unit {
	case Hour:
		return lt.Format("2006-01-02T15")
	case Day:
		return lt.Format("2006-01-02")
	case Month:
		return lt.Format("2006-01")
	}
	// The week belongs to the year holding its fourth day, numbered from
	// the first week whose fourth day is in that year: ISO 8601 for weeks
	// starting on Monday, the same rule for any other first day.
	y, m, d := lt.Date()
	startDays := civilDays(y, m, d) - int64((int(lt.Weekday())-int(b.weekStart)+7)%7)
	mid := time.Unix((startDays+3)*86400, 0).UTC()
	return fmt.Sprintf("%04d-W%02d", mid.Year(), (mid.YearDay()-1)/7+1)
}

func civilDays(y int, m time.Month, d int) int64 {
	return floorDiv(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix(), 86400)
}

// ParsePeriod returns the period of a periodic board named by label. It
// returns an error wrapping ErrBadParam when label is not a well-formed
// label of the board's unit, and ErrUnknownPeriod when it is well formed
// but names no period of the board's calendar (2026-02-30, a skipped hour,
// week 54).
func (b *Board) ParsePeriod(label string) (Period, error) {
	if b.kind != Periodic {
		return Period{}, fmt.Errorf("%w: board %s is %s and has no periods", ErrBadParam, b.name, b.kind)
	}
	bad := func() (Period, error) {
		return Period{}, fmt.Errorf("%w: period %q is not a %s label (%s)", ErrBadParam, label, b.unit, b.unit.example())
	}
	num := func(s string) (int, bool) {
		if len(s) == 0 {
			return 0, false
		}
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
		}
		n, err := strconv.Atoi(s)
		return n, err == nil
	}
	var candidates []time.Time
	switch b.unit {
	case Hour, Day, Month:
		want := map[Unit]int{Hour: 13, Day: 10, Month: 7}[b.unit]
		if len(label) != want || label[4] != '-' || (b.unit != Month && label[7] != '-') || (b.unit == Hour && label[10] != 'T') {
			return bad()
		}
		y, ok1 := num(label[0:4])
		mo, ok2 := num(label[5:7])
		d, h := 15, 12
		ok3, ok4 := true, true
		if b.unit != Month {
			d, ok3 = num(label[8:10])
		}
		if b.unit == Hour {
			h, ok4 = num(label[11:13])
		}
		if !ok1 || !ok2 || !ok3 || !ok4 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 {
			return bad()
		}
		if b.unit == Hour {
			for _, min := range []int{0, 30, 59} {
				candidates = append(candidates, time.Date(y, time.Month(mo), d, h, min, 0, 0, b.loc))
			}
		} else {
			for _, hh := range []int{12, 0, 6, 18, 23} {
				candidates = append(candidates, time.Date(y, time.Month(mo), d, hh, 0, 0, 0, b.loc))
			}
		}
	case Week:
		if len(label) != 8 || label[4] != '-' || label[5] != 'W' {
			return bad()
		}
		y, ok1 := num(label[0:4])
		w, ok2 := num(label[6:8])
		if !ok1 || !ok2 || w < 1 || w > 53 {
			return bad()
		}
		// Week 1's fourth day is the first day of year y whose weekday is
		// the week start + 3.
		jan1 := time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
		midWd := (int(b.weekStart) + 3) % 7
		off := (midWd - int(jan1.Weekday()) + 7) % 7
		mid := jan1.AddDate(0, 0, off+7*(w-1))
		yy, mm, dd := mid.Date()
		for _, hh := range []int{12, 0, 6, 18, 23} {
			candidates = append(candidates, time.Date(yy, mm, dd, hh, 0, 0, 0, b.loc))
		}
	}
	for _, c := range candidates {
		if b.label(c) == label {
			return b.Period(c), nil
		}
	}
	return Period{}, fmt.Errorf("%w: %q is not a %s of board %s in %s", ErrUnknownPeriod, label, b.unit, b.name, b.loc)
}

func (u Unit) example() string {
	switch u {
	case Hour:
		return "like 2026-11-22T13"
	case Day:
		return "like 2026-11-22"
	case Week:
		return "like 2026-W47"
	}
	return "like 2026-11"
}

// PeriodsBetween returns how many periods lie from p to q: 0 for the same
// period, negative when q is before p. Hours are walked one by one near the
// limit, since skipped and repeated wall-clock hours make keys uneven.
func (b *Board) PeriodsBetween(p, q Period, limit int64) int64 {
	d := b.index(q.key) - b.index(p.key)
	if b.unit != Hour || d <= 0 || d > limit+3 {
		return d
	}
	n := int64(0)
	for x := p; x.key < q.key; x = b.Period(x.End) {
		n++
	}
	return n
}

// KeptUntil returns how long period p stays readable, and so when its
// state may go: the end of the period Retention periods after it, plus
// grace.
func (b *Board) KeptUntil(p Period) time.Time {
	e := p.End
	for range b.retention {
		e = b.Period(e).End
	}
	return e.Add(b.grace)
}
