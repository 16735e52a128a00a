package boardmodel_test

import (
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
)

// TestPeriodTable pins period boundaries worked out by hand, DST days
// included, and checks that board's periods and the model's own calendar
// both match them: the two share no code, and neither may drift.
func TestPeriodTable(t *testing.T) {
	utc := func(s string) time.Time {
		x, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	for _, c := range []struct {
		period, tz, weekStart string
		at                    string // an instant inside the period
		label, start, end     string // start and end in UTC
	}{
		// Europe/Berlin: clocks go forward on 2026-03-29 at 01:00 UTC (02:00 → 03:00) and back on
		// 2026-10-25 at 01:00 UTC (03:00 → 02:00).
		{"day", "Europe/Berlin", "", "2026-03-29T12:00:00Z", "2026-03-29", "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z"}, // 23 h
		{"day", "Europe/Berlin", "", "2026-10-25T12:00:00Z", "2026-10-25", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z"}, // 25 h
		{"hour", "Europe/Berlin", "", "2026-03-29T00:30:00Z", "2026-03-29T01", "2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z"},
		{"hour", "Europe/Berlin", "", "2026-03-29T01:00:00Z", "2026-03-29T03", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"}, // 02 skipped
		{"hour", "Europe/Berlin", "", "2026-10-25T01:30:00Z", "2026-10-25T02", "2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z"}, // 02 twice: 2 h
		{"week", "Europe/Berlin", "", "2026-03-29T21:59:59Z", "2026-W13", "2026-03-22T23:00:00Z", "2026-03-29T22:00:00Z"},
		{"month", "Europe/Berlin", "", "2026-10-15T00:00:00Z", "2026-10", "2026-09-30T22:00:00Z", "2026-10-31T23:00:00Z"},
		// America/New_York: forward on 2026-03-08 at 07:00 UTC, back on 2026-11-01 at 06:00 UTC.
		{"day", "America/New_York", "", "2026-03-08T12:00:00Z", "2026-03-08", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z"},
		{"day", "America/New_York", "", "2026-11-01T12:00:00Z", "2026-11-01", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z"},
		{"hour", "America/New_York", "", "2026-11-01T06:30:00Z", "2026-11-01T01", "2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z"},
		{"week", "America/New_York", "sunday", "2026-11-01T04:00:00Z", "2026-W44", "2026-11-01T04:00:00Z", "2026-11-08T05:00:00Z"},
		{"week", "America/New_York", "sunday", "2026-11-01T03:59:59Z", "2026-W43", "2026-10-25T04:00:00Z", "2026-11-01T04:00:00Z"},
		// UTC and a zone without DST; a week across a year boundary (2026 has 53 ISO weeks).
		{"month", "UTC", "", "2026-02-14T00:00:00Z", "2026-02", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"},
		{"week", "UTC", "", "2027-01-01T00:00:00Z", "2026-W53", "2026-12-28T00:00:00Z", "2027-01-04T00:00:00Z"},
		{"day", "Asia/Shanghai", "", "2026-06-30T16:00:00Z", "2026-07-01", "2026-06-30T16:00:00Z", "2026-07-01T16:00:00Z"},
	} {
		name := c.period + "/" + c.tz + "/" + c.at
		bs, err := boarddef.Compile([]boarddef.Config{{Name: "b", Events: []string{"gift"}, Member: "room_id", Kind: "periodic",
			Period: c.period, TZ: c.tz, WeekStart: c.weekStart}})
		if err != nil {
			t.Fatal(err)
		}
		b := bs[0]
		at, start, end := utc(c.at), utc(c.start), utc(c.end)
		if p := b.Period(at); p.Label != c.label || !p.Start.Equal(start) || !p.End.Equal(end) {
			t.Errorf("%s: board: %s [%s, %s), want %s [%s, %s)", name, p.Label, p.Start.UTC(), p.End.UTC(), c.label, start, end)
		}
		if p := boardmodel.NewCalendar(b).Of(at); p.Label != c.label || !p.Start.Equal(start) || !p.End.Equal(end) {
			t.Errorf("%s: model: %s [%s, %s), want %s [%s, %s)", name, p.Label, p.Start.UTC(), p.End.UTC(), c.label, start, end)
		}
		if p, err := b.ParsePeriod(c.label); err != nil || !p.Start.Equal(start) {
			t.Errorf("%s: boarddef.ParsePeriod(%s) = %v, %v", name, c.label, p.Start, err)
		}
	}
}

// TestCalendarAgreesWithBoard walks every hour of 2026 through the model's
// calendar and board's periods in zones with DST.
func TestCalendarAgreesWithBoard(t *testing.T) {
	for _, unit := range []string{"hour", "day", "week", "month"} {
		for _, tz := range []string{"Europe/Berlin", "America/New_York", "Australia/Sydney"} {
			bs, err := boarddef.Compile([]boarddef.Config{{Name: "b", Events: []string{"gift"}, Member: "room_id", Kind: "periodic", Period: unit, TZ: tz}})
			if err != nil {
				t.Fatal(err)
			}
			cal := boardmodel.NewCalendar(bs[0])
			for at := time.Date(2026, 1, 1, 0, 7, 0, 0, time.UTC); at.Year() == 2026; at = at.Add(time.Hour) {
				p, q := bs[0].Period(at), cal.Of(at)
				if p.Label != q.Label || !p.Start.Equal(q.Start) || !p.End.Equal(q.End) {
					t.Fatalf("%s %s at %s: board %s [%s, %s), model %s [%s, %s)", unit, tz, at, p.Label, p.Start, p.End, q.Label, q.Start, q.End)
				}
			}
		}
	}
}
