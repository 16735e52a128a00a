package meeting

import (
	"slices"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/codec"
)

// TestGenerateDeterministic: the same scenario, duration and seed give the
// same events, in time order and inside [BaseTS, BaseTS+d]; another seed
// gives another meeting.
func TestGenerateDeterministic(t *testing.T) {
	for _, sc := range Scenarios() {
		e1, e2 := Generate(sc, time.Minute, 7), Generate(sc, time.Minute, 7)
		if len(e1) == 0 || !slices.Equal(e1, e2) {
			t.Fatalf("%s: Generate is not deterministic (%d events)", sc.Name, len(e1))
		}
		if !slices.IsSortedFunc(e1, func(a, b codec.Event) int { return int(a.TS - b.TS) }) {
			t.Fatalf("%s: events not in time order", sc.Name)
		}
		// The last tick's volume reports and mutes may land a little
		// after the end.
		if first, last := e1[0].TS, e1[len(e1)-1].TS; first < BaseTS || last > BaseTS+time.Minute.Milliseconds()+2000 {
			t.Fatalf("%s: events from %d to %d, want within a minute of BaseTS %d", sc.Name, first, last, BaseTS)
		}
		if slices.Equal(e1, Generate(sc, time.Minute, 8)) {
			t.Fatalf("%s: seeds 7 and 8 gave the same meeting", sc.Name)
		}
	}
}

func TestScenarioByName(t *testing.T) {
	for _, sc := range Scenarios() {
		got, err := ScenarioByName(sc.Name)
		if err != nil || got.Name != sc.Name {
			t.Fatalf("ScenarioByName(%q) = %q, %v", sc.Name, got.Name, err)
		}
	}
	if _, err := ScenarioByName("keynote"); err == nil {
		t.Fatal("an unknown scenario was found")
	}
}
