package boarddef

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func periodic(t testing.TB, unit, tz, weekStart string) *Board {
	t.Helper()
	bs, err := Compile([]Config{{Name: "p", Events: []string{"score"}, Member: "user_id", Kind: "periodic",
		Period: unit, TZ: tz, WeekStart: weekStart}})
	if err != nil {
		t.Fatal(err)
	}
	return bs[0]
}

var zones = []string{"UTC", "Europe/Berlin", "America/New_York", "Asia/Shanghai", "Australia/Lord_Howe", "Asia/Kolkata", "America/Sao_Paulo"}

// TestPeriodProperties checks, for random instants in many zones, that the
// period holds the instant, that its label is the instant's label, that the
// label changes exactly at its start and end, that ParsePeriod returns it
// back, and that Monday weeks are ISO 8601 weeks.
func TestPeriodProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lo := time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	hi := time.Date(2035, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for _, tz := range zones {
		for _, unit := range []string{"hour", "day", "week", "month"} {
			ws := ""
			if unit == "week" {
				ws = weekdays[rng.IntN(7)]
			}
			b := periodic(t, unit, tz, ws)
			for range 300 {
				at := time.UnixMilli(lo + rng.Int64N(hi-lo))
				checkPeriod(t, b, at)
			}
		}
	}
}

// TestPeriodDST pins the periods around DST changes.
func TestPeriodDST(t *testing.T) {
	ny := periodic(t, "hour", "America/New_York", "")
	// 2026-11-01: 01:00-02:00 happens twice; the label names one period of two hours.
	p := ny.Period(time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC)) // 01:30 EST, the second time
	if p.Label != "2026-11-01T01" || p.End.Sub(p.Start) != 2*time.Hour {
		t.Errorf("repeated hour: %s %s…%s", p.Label, p.Start, p.End)
	}
	// 2026-03-08: 02:00-03:00 does not exist.
	if _, err := ny.ParsePeriod("2026-03-08T02"); err == nil {
		t.Error("a skipped hour parsed")
	}
	berlin := periodic(t, "day", "Europe/Berlin", "")
	p = berlin.Period(time.Date(2026, 3, 29, 12, 0, 0, 0, time.UTC))
	if p.Label != "2026-03-29" || p.End.Sub(p.Start) != 23*time.Hour {
		t.Errorf("spring-forward day: %s lasts %s", p.Label, p.End.Sub(p.Start))
	}
	week := periodic(t, "week", "Asia/Shanghai", "monday")
	if l := week.Period(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)).Label; l != "2026-W47" {
		t.Errorf("week label %s", l)
	}
	if l := periodic(t, "week", "UTC", "sunday").Period(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)).Label; l != "2026-W47" {
		t.Errorf("sunday week label %s", l) // Sunday 22 Nov starts the week whose fourth day, 25 Nov, is day 329
	}
}

func checkPeriod(t *testing.T, b *Board, at time.Time) {
	t.Helper()
	p := b.Period(at)
	where := fmt.Sprintf("%s %s in %s at %s", b.unit, p.Label, b.loc, at.UTC().Format(time.RFC3339Nano))
	ms := time.Millisecond
	switch {
	case at.Before(p.Start) || !at.Before(p.End):
		t.Fatalf("%s: not in [%s, %s)", where, p.Start, p.End)
	case b.label(at) != p.Label || b.label(p.Start) != p.Label || b.label(p.End.Add(-ms)) != p.Label:
		t.Fatalf("%s: label differs inside the period", where)
	case b.label(p.Start.Add(-ms)) == p.Label || b.label(p.End) == p.Label:
		t.Fatalf("%s: label continues outside [%s, %s)", where, p.Start, p.End)
	}
	q, err := b.ParsePeriod(p.Label)
	if err != nil || !q.Start.Equal(p.Start) || !q.End.Equal(p.End) {
		t.Fatalf("%s: ParsePeriod = %v, %v", where, q, err)
	}
	if b.unit == Week && b.weekStart == time.Monday {
		y, w := at.In(b.loc).ISOWeek()
		if iso := fmt.Sprintf("%04d-W%02d", y, w); iso != p.Label {
			t.Fatalf("%s: ISO week %s", where, iso)
		}
	}
}

// FuzzParsePeriod: any label either fails with ErrBadParam or
// ErrUnknownPeriod, or names a period whose label is itself.
func FuzzParsePeriod(f *testing.F) {
	for _, s := range []string{"2026-11-22", "2026-11-22T13", "2026-W47", "2026-11", "2026-W53", "2026-02-30", "x"} {
		f.Add(s, uint8(0))
	}
	units := []string{"hour", "day", "week", "month"}
	bs := map[string]*Board{}
	for _, u := range units {
		bs[u] = periodic(f, u, "America/New_York", "")
	}
	f.Fuzz(func(t *testing.T, label string, u uint8) {
		b := bs[units[int(u)%4]]
		p, err := b.ParsePeriod(label)
		if err != nil {
			if !strings.Contains(err.Error(), ErrBadParam.Error()) && !strings.Contains(err.Error(), ErrUnknownPeriod.Error()) {
				t.Fatalf("%q: %v", label, err)
			}
			return
		}
		if p.Label != label {
			t.Fatalf("%q parsed as %q", label, p.Label)
		}
	})
}

func TestCompileErrors(t *testing.T) {
	base := Config{Name: "b", Events: []string{"gift"}, Member: "room_id", Kind: "rolling", Slice: time.Hour, Slices: 24}
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Slice = 7 * time.Minute }, "boards[0].slice: 7m does not divide a day"},
		{func(c *Config) { c.Name = "Bad Name" }, "boards[0].name:"},
		{func(c *Config) { c.Events = []string{"volume"} }, "boards[0].events:"},
		{func(c *Config) { c.Events = []string{"read"} }, "boards[0].value: read events carry no value"},
		{func(c *Config) { c.Op = "best" }, "boards[0].op: best needs kind periodic"},
		{func(c *Config) {
			c.Kind = "periodic"
			c.Slice, c.Slices = 0, 0
			c.Period = "week"
			c.TZ = "Mars/Olympus"
		}, "boards[0].tz:"},
		{func(c *Config) { c.Tie = "first-reached"; c.MaxTotal = 1 << 40 }, "boards[0].max-total:"},
		{func(c *Config) { c.Tie = "first-reached"; c.MaxTotal = 1 << 30 }, "boards[0].max-total: the first-reached layout ends"},
		{func(c *Config) {
			c.Kind = "periodic"
			c.Slice, c.Slices = 0, 0
			c.Period = "month"
			c.Tie = "first-reached"
			c.MaxTotal = 1 << 25
		}, "boards[0].max-total: 33554432 needs 26 bits"},
		{func(c *Config) { c.Kind = "windows"; c.Slices = 0; c.Windows = Lengths(90 * time.Minute) }, "boards[0].windows:"},
		// windows with slices of their own
		{func(c *Config) {
			c.Kind, c.Slices, c.Slice = "windows", 0, 10*time.Minute
			c.Windows = []Window{{Length: time.Hour, Slice: 15 * time.Minute}}
		}, "boards[0].windows[0].slice: 15m is not a multiple of the board's slice 10m"},
		{func(c *Config) {
			c.Kind, c.Slices, c.Slice = "windows", 0, time.Minute
			c.Windows = []Window{{Length: 3 * time.Minute}, {Length: 14 * time.Hour, Slice: 7 * time.Hour}}
		}, "boards[0].windows[1].slice: 7h does not divide a day"},
		{func(c *Config) {
			c.Kind, c.Slices, c.Slice = "windows", 0, time.Minute
			c.Windows = []Window{{Length: 90 * time.Minute, Slice: time.Hour}}
		}, "boards[0].windows: 1h30m is not a multiple of the slice 1h"},
		{func(c *Config) {
			c.Kind, c.Slices, c.Slice = "windows", 0, 0
			c.Windows = []Window{{Length: 3 * time.Minute}, {Length: 24 * time.Hour, Slice: time.Hour}}
		}, "boards[0].slice: is required unless every window names its own slice"},
		{func(c *Config) {
			c.Kind, c.Slices, c.Slice = "windows", 0, time.Minute
			c.Windows = []Window{{Length: time.Hour, Slice: 5 * time.Minute}, {Length: time.Hour, Slice: 10 * time.Minute}}
		}, "boards[0].windows: 1h must be longer than the window before it"},
		// total boards and decay
		{func(c *Config) { c.Kind = "total" }, "boards[0].slice: only rolling and windows boards have slices"},
		{func(c *Config) { c.Kind, c.Slice, c.Slices, c.Settle = "total", 0, 0, "true" }, "boards[0].settle:"},
		{func(c *Config) {
			c.Kind, c.Slices, c.Windows, c.Decay = "windows", 0, Lengths(time.Hour, 24*time.Hour), &Decay{HalfLife: "7d"}
		}, "boards[0].decay: windows boards do not decay"},
		{func(c *Config) { c.Slice, c.Decay = 5*time.Minute, &Decay{HalfLife: "90s"} }, "boards[0].decay.half-life:"},
		{func(c *Config) { c.Decay = &Decay{HalfLife: "90m"} }, "boards[0].decay.half-life: 90m is not a whole number of slices (1h)"},
		{func(c *Config) { c.Decay, c.MaxTotal = &Decay{HalfLife: "7d"}, 1<<30 }, "boards[0].max-total:"},
		{func(c *Config) { c.Decay, c.Settle = &Decay{HalfLife: "7d"}, "daily" }, "boards[0].settle:"},
		{func(c *Config) { c.Decay, c.Tie = &Decay{HalfLife: "7d"}, "first-reached" }, "boards[0].tie:"},
		{func(c *Config) { c.Kind, c.Slice, c.Slices, c.Decay = "total", 0, 0, &Decay{HalfLife: "30m"} }, "boards[0].decay.half-life:"},
		{func(c *Config) { c.Kind, c.Slice, c.Slices, c.Decay = "total", 0, 0, &Decay{HalfLife: "a week"} }, "boards[0].decay.half-life:"},
		{func(c *Config) {
			c.Kind, c.Slice, c.Slices, c.Decay, c.Op = "total", 0, 0, &Decay{HalfLife: "7d"}, "best"
		}, "boards[0].decay: only incr boards decay"},
		{func(c *Config) {
			c.Kind, c.Slice, c.Slices, c.Decay, c.Tie = "total", 0, 0, &Decay{HalfLife: "7d"}, "first-reached"
		}, "boards[0].tie:"},
		{func(c *Config) {
			c.Kind, c.Slice, c.Slices, c.Decay, c.MaxTotal = "total", 0, 0, &Decay{HalfLife: "7d"}, 1<<30
		}, "boards[0].max-total:"},
		{func(c *Config) {
			c.Kind, c.Slice, c.Slices, c.Decay, c.AllowNegative, c.Floor = "total", 0, 0, &Decay{HalfLife: "7d"}, true, "-5"
		}, "boards[0].floor: a decay board's floor is 0 or none"},
	} {
		cfg := base
		c.edit(&cfg)
		_, err := Compile([]Config{cfg})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q…", cfg, err, c.want)
		}
	}
	if _, err := Compile([]Config{base, base}); err == nil || !strings.Contains(err.Error(), "boards[1].name") {
		t.Errorf("duplicate names: %v", err)
	}
}
