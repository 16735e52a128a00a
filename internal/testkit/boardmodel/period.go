package boardmodel

import (
	"fmt"
	"time"

	"github.com/rostrumhq/rostrum/board/boarddef"
)

// The model's own calendar: it shares no code with board's periods, so a
// bug in either shows as a disagreement (TestPeriodTable pins both to a
// table worked out by hand, DST days included).
//
// A period is the set of instants whose wall-clock time in the board's zone
// carries one label. Its start and end are found by walking quarter hours
// from the instant until the label changes: slow, and obviously right in
// every zone whose offsets are whole quarter hours (all of today's).

// Period is a calendar period: its label and [Start, End).
type Period struct {
	Label      string
	Start, End time.Time
}

// Calendar computes the periods of one periodic board. It is not safe for
// concurrent use (it caches).
type Calendar struct {
	unit  boarddef.Unit
	loc   *time.Location
	ws    time.Weekday
	cache map[string]Period
}

// NewCalendar returns the calendar of periodic board b.
func NewCalendar(b *boarddef.Board) *Calendar {
	return &Calendar{unit: b.Unit(), loc: b.Location(), ws: b.WeekStart(), cache: map[string]Period{}}
}

// Label returns the label of the period holding t.
func (c *Calendar) Label(t time.Time) string {
	lt := t.In(c.loc)
	switch c.unit {
	case boarddef.Hour:
		return fmt.Sprintf("%04d-%02d-%02dT%02d", lt.Year(), int(lt.Month()), lt.Day(), lt.Hour())
	case boarddef.Day:
		return fmt.Sprintf("%04d-%02d-%02d", lt.Year(), int(lt.Month()), lt.Day())
	case boarddef.Month:
		return fmt.Sprintf("%04d-%02d", lt.Year(), int(lt.Month()))
	}
	// Week: its first day is the latest week-start day on or before the
	// local date; the week is numbered in the year of its fourth day, from
	// that year's first week whose fourth day falls in it.
	back := (int(lt.Weekday()) - int(c.ws) + 7) % 7
	fourth := time.Date(lt.Year(), lt.Month(), lt.Day()-back+3, 12, 0, 0, 0, time.UTC)
	return fmt.Sprintf("%04d-W%02d", fourth.Year(), (fourth.YearDay()+6)/7)
}

const quarter = 15 * time.Minute

// Of returns the period holding t.
func (c *Calendar) Of(t time.Time) Period {
	l := c.Label(t)
	if p, ok := c.cache[l]; ok {
		return p
	}
	q := t.Truncate(quarter)
	start := q
	for c.Label(start.Add(-quarter)) == l {
		start = start.Add(-quarter)
	}
	end := q.Add(quarter)
	for c.Label(end) == l {
		end = end.Add(quarter)
	}
	p := Period{Label: l, Start: start.In(c.loc), End: end.In(c.loc)}
	if len(c.cache) > 4096 {
		clear(c.cache)
	}
	c.cache[l] = p
	return p
}

// Next returns the period after p.
func (c *Calendar) Next(p Period) Period { return c.Of(p.End) }
