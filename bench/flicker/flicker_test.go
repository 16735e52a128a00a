package flicker

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/meeting"
	"github.com/rostrumhq/rostrum/stability"
)

// TestTargets checks the targets of the stable strategy on the default
// meetings: on the discussion at most half the visible changes of the seed
// merge with a median time to appear of at most 1 s, and in no scenario more
// changes than the seed merge, and a stale share of at most 10%. These are counts on the events' clock, not
// timings, so they are the same on every machine.
// defaults is the hysteresis as `rostrum run` and `rostrum-dev bench --flicker`
// configure it by default.
var defaults = Config{Dwell: stability.DefaultDwell, Grace: stability.DefaultGrace, Margin: stability.DefaultMargin}

func TestTargets(t *testing.T) {
	rep, err := Run(defaults)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
	if len(rep.Scenarios) != len(meeting.Scenarios()) {
		t.Fatalf("%d scenarios reported, want %d", len(rep.Scenarios), len(meeting.Scenarios()))
	}
	for _, s := range rep.Scenarios {
		raw, seed, hyst := s.Result(Raw), s.Result(Merge), s.Result(Hysteresis)
		if raw == nil || seed == nil || hyst == nil {
			t.Fatalf("%s: a strategy is missing: %+v", s.Name, s.Results)
		}
		if s.Stints < 50 {
			t.Errorf("%s: only %d stints of members who truly belong: too few to measure", s.Name, s.Stints)
		}
		if hyst.ChangesPerMin > seed.ChangesPerMin {
			t.Errorf("%s: hysteresis %.1f changes/min, more than the seed merge's %.1f", s.Name, hyst.ChangesPerMin, seed.ChangesPerMin)
		}
		// The seed merge moves nothing that stays, and follows the raw set.
		if seed.MovedPerMin > raw.MovedPerMin/10 || seed.ReplacedPerMin != raw.ReplacedPerMin {
			t.Errorf("%s: seed merge %+v against raw %+v", s.Name, seed, raw)
		}
		// The price of calm: shown members that no longer belong, kept small.
		if hyst.StaleShare > 0.10 {
			t.Errorf("%s: hysteresis shows members who no longer belong %.1f%% of the time, want at most 10%%", s.Name, 100*hyst.StaleShare)
		}
		if raw.StaleShare != 0 || raw.AppearP95 != 0 {
			t.Errorf("%s: the raw top-N is the truth, yet %+v", s.Name, raw)
		}
	}
	d := findScenario(t, rep, "discussion")
	seed, hyst := d.Result(Merge), d.Result(Hysteresis)
	if hyst.ChangesPerMin > seed.ChangesPerMin/2 {
		t.Errorf("discussion: hysteresis %.1f changes/min, want at most half of the seed merge's %.1f", hyst.ChangesPerMin, seed.ChangesPerMin)
	}
	if hyst.AppearP50 > 1 {
		t.Errorf("discussion: hysteresis median time to appear %.2f s, want at most 1 s", hyst.AppearP50)
	}
}

// TestScreenShareHandover: a new presenter takes a tile at once (never
// waits the dwell), the hysteresis stays far calmer than the seed merge, and
// republishing for changed flags costs few output records.
func TestScreenShareHandover(t *testing.T) {
	rep, err := Run(Config{Scenarios: []string{"handover"}, Dwell: stability.DefaultDwell, Grace: stability.DefaultGrace, Margin: stability.DefaultMargin})
	if err != nil {
		t.Fatal(err)
	}
	h := findScenario(t, rep, "handover")
	seed, hyst := h.Result(Merge), h.Result(Hysteresis)
	if hyst.ChangesPerMin > seed.ChangesPerMin/10 {
		t.Errorf("handover: hysteresis %.1f changes/min, want at most a tenth of the seed merge's %.1f", hyst.ChangesPerMin, seed.ChangesPerMin)
	}
	if hyst.OutputsPerMin < hyst.ChangesPerMin/2 || hyst.RepublishedPerMin > hyst.OutputsPerMin/2 || hyst.RepublishedPerMin == 0 {
		t.Errorf("handover: hysteresis outputs %.1f/min of which %.1f republished, for %.1f changes/min", hyst.OutputsPerMin, hyst.RepublishedPerMin, hyst.ChangesPerMin)
	}
	// The meeting has hand-overs to measure, and members who belong (the
	// presenters among them) appear quickly.
	sc, _ := meeting.ScenarioByName("handover")
	evs := meeting.Generate(sc, 10*time.Minute, 1)
	starts := 0
	for _, ev := range evs {
		if ev.Type == codec.TypeScreenShare && ev.Value == 1 {
			starts++
		}
	}
	if starts < 3 {
		t.Fatalf("%d screen shares started in 10 minutes", starts)
	}
	if hyst.AppearP95 > 1.5 {
		t.Errorf("handover: hysteresis p95 time to appear %.2f s", hyst.AppearP95)
	}
}

// TestRunEvents replays generated meetings as recorded ones: one row per
// room, and an overall row pooling them.
func TestRunEvents(t *testing.T) {
	rooms := map[string][]codec.Event{}
	for _, name := range []string{"discussion", "handover"} {
		sc, _ := meeting.ScenarioByName(name)
		evs := meeting.Generate(sc, 3*time.Minute, 2)
		slices.Reverse(evs) // any order
		rooms["r-"+name] = evs
	}
	rep, err := RunEvents(defaults, rooms)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Scenarios) != 3 || rep.Scenarios[2].Name != "overall" {
		t.Fatalf("rows %+v", rep.Scenarios)
	}
	all := rep.Scenarios[2]
	for _, s := range Strategies() {
		a, b, o := rep.Scenarios[0].Result(s), rep.Scenarios[1].Result(s), all.Result(s)
		lo, hi := min(a.ChangesPerMin, b.ChangesPerMin), max(a.ChangesPerMin, b.ChangesPerMin)
		if o.ChangesPerMin < lo || o.ChangesPerMin > hi {
			t.Errorf("%s: overall %.1f changes/min outside the rooms' %.1f..%.1f", s, o.ChangesPerMin, lo, hi)
		}
	}
	if _, err := RunEvents(defaults, map[string][]codec.Event{"r": {{Type: codec.TypeGift, TS: 1}}}); err == nil {
		t.Error("no meeting events replayed without error")
	}
}

func findScenario(t *testing.T, rep *Report, name string) *ScenarioResult {
	t.Helper()
	for i := range rep.Scenarios {
		if rep.Scenarios[i].Name == name {
			return &rep.Scenarios[i]
		}
	}
	t.Fatalf("scenario %s missing", name)
	return nil
}

// TestDeterministic: the same Config gives the same report, byte for byte;
// another seed gives another meeting (package meeting tests the generator).
func TestDeterministic(t *testing.T) {
	cfg := defaults
	cfg.Duration, cfg.Scenarios = 2*time.Minute, []string{"discussion", "lecture"}
	a, _ := Run(cfg)
	b, _ := Run(cfg)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Fatalf("two runs differ:\n%s\n%s", ja, jb)
	}
	cfg.Seed = 2
	c, _ := Run(cfg)
	if jc, _ := json.Marshal(c); bytes.Equal(ja, jc) {
		t.Fatal("seeds 1 and 2 gave the same report")
	}
}

func TestChanges(t *testing.T) {
	for _, tt := range []struct {
		a, b            []string
		replaced, moved int
	}{
		{nil, []string{"a", "b"}, 2, 0},
		{[]string{"a", "b"}, []string{"a", "b"}, 0, 0},
		{[]string{"a", "b"}, []string{"b", "a"}, 0, 2},
		{[]string{"a", "b", "c"}, []string{"a", "d", "c"}, 1, 0},
		{[]string{"a", "b", "c"}, []string{"c", "a"}, 1, 2},
		{[]string{"a", "b"}, nil, 2, 0},
	} {
		if r, m := changes(tt.a, tt.b); r != tt.replaced || m != tt.moved {
			t.Errorf("changes(%v, %v) = %d, %d; want %d, %d", tt.a, tt.b, r, m, tt.replaced, tt.moved)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Scenarios: []string{"opera"}}, `unknown scenario "opera"`},
		{Config{Duration: time.Second}, "Duration"},
		{Config{N: 101}, "N must be"},
		{Config{Margin: 5000}, "Margin"},
		{Config{Dwell: time.Hour}, "Dwell"},
	} {
		if err := tt.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want an error about %s", tt.cfg, err, tt.want)
		}
	}
}
