package boardmodel_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
)

// TestRollingByHand checks the model against totals worked out by hand: a
// 3-slice rolling board of 1-minute slices with first-reached ties.
func TestRollingByHand(t *testing.T) {
	g := time.Duration(0)
	bs, err := boarddef.Compile([]boarddef.Config{{Name: "r", Events: []string{"gift"}, Member: "room_id", Kind: "rolling",
		Slice: time.Minute, Slices: 3, Tie: "first-reached", Grace: &g}})
	if err != nil {
		t.Fatal(err)
	}
	m := boardmodel.New(bs)
	t0 := time.Date(2027, 1, 1, 12, 0, 0, 0, time.UTC)
	gift := func(room string, v int64, at time.Duration) codec.Event {
		return codec.Event{RoomID: room, UserID: "u", Type: codec.TypeGift, Value: v, TS: t0.Add(at).UnixMilli()}
	}
	m.Record("t", 0, 0, t0, []codec.Event{gift("a", 5, 0), gift("b", 5, 2*time.Second)})
	m.Record("t", 0, 1, t0.Add(time.Minute), []codec.Event{gift("b", 1, 70*time.Second)})
	m.Record("t", 0, 1, t0.Add(time.Minute), []codec.Event{gift("b", 100, 70*time.Second)}) // redelivered offset: ignored
	m.Record("t", 0, 2, t0.Add(time.Minute), []codec.Event{gift("a", 1, 61*time.Second)})
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	want := []boardmodel.Entry{{"a", 1, 6, ms(61 * time.Second)}, {"b", 2, 6, ms(70 * time.Second)}} // a reached 6 first
	if got := m.Ranking(0, "", 0); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// At 12:03 the 12:00 slice has left the window: 1 each, b's 1 came later.
	m.Expire(t0.Add(3 * time.Minute))
	want = []boardmodel.Entry{{"a", 1, 1, ms(61 * time.Second)}, {"b", 2, 1, ms(70 * time.Second)}}
	if got := m.Ranking(0, "", 0); !slices.Equal(got, want) {
		t.Fatalf("after expiry got %v, want %v", got, want)
	}
	// An event for the subtracted slice is late in Redis; one from a record
	// produced after its slice left is late by record time.
	if l := m.Record("t", 0, 3, t0.Add(2*time.Minute), []codec.Event{gift("c", 9, time.Second)}); len(l) != 1 || !l[0].InRedis {
		t.Fatalf("late in redis: %v", l)
	}
	if l := m.Record("t", 0, 4, t0.Add(4*time.Minute), []codec.Event{gift("c", 9, time.Second)}); len(l) != 1 || l[0].InRedis {
		t.Fatalf("late by record time: %v", l)
	}
}

// TestRollingDecayByHand checks the model against sums worked out by hand:
// a rolling board of six 30-minute slices and a 1-hour half-life. Two
// refunds-free gifts of 999 one half-life back land in two slices with odd
// weights (M = round(2^20·2^(r/H)) for r = 15 s and 30 min 15 s: 1051609
// and 1487199), so a rebase that floored the window sum instead of each
// slice would be off by one, and the expiry of the older slice would leave
// that one behind.
func TestRollingDecayByHand(t *testing.T) {
	g := time.Duration(0)
	bs, err := boarddef.Compile([]boarddef.Config{{Name: "r", Events: []string{"gift"}, Member: "room_id", Kind: "rolling",
		Slice: 30 * time.Minute, Slices: 6, Decay: &boarddef.Decay{HalfLife: "1h"}, Grace: &g}})
	if err != nil {
		t.Fatal(err)
	}
	m := boardmodel.New(bs)
	t0 := time.Date(2027, 1, 1, 12, 0, 0, 0, time.UTC) // a half-life boundary: the epoch is 2025-01-01
	gift := func(v int64, at time.Duration) codec.Event {
		return codec.Event{RoomID: "a", UserID: "u", Type: codec.TypeGift, Value: v, TS: t0.Add(at).UnixMilli()}
	}
	m.Rebase(t0) // the base: the half-life before the last whole one, 11:00
	k0, _ := m.DecayBase(0)
	if l := m.Record("t", 0, 0, t0, []codec.Event{gift(999, -time.Hour+15*time.Second), gift(999, -30*time.Minute+15*time.Second)}); len(l) != 0 {
		t.Fatalf("late: %v", l)
	}
	s0 := t0.UnixMilli() / (30 * time.Minute).Milliseconds()
	want := map[int64]map[string]int64{s0 - 2: {"a": 999 * 1051609}, s0 - 1: {"a": 999 * 1487199}}
	if got := m.SliceSums(0); !mapsEqual(got, want) {
		t.Fatalf("slices %v, want %v", got, want)
	}
	// At 13:00 the base moves one half-life: each slice halves, floored,
	// and the window sum is their sum, 1268134595, one below half the sum.
	m.Expire(t0.Add(time.Hour))
	if k, _ := m.DecayBase(0); k != k0+1 {
		t.Fatalf("base %d, want %d", k, k0+1)
	}
	if got := m.WindowSums(0)["a"]; got != 525278695+742855900 {
		t.Fatalf("window sum %d, want 1268134595", got)
	}
	// Read at 13:00: 1268134595 / 2^21 = 604.69…; ideally 999·(2^(−7185/3600) + 2^(−5385/3600)) = 604.7.
	if got := m.RollingDecayRanking(0, t0.Add(time.Hour)); len(got) != 1 || got[0].Total != 605 {
		t.Fatalf("ranking %v, want a at 605", got)
	}
	// At 14:00 the base moves again and the 11:00 slice leaves the window:
	// what stays is exactly the 11:30 slice's sum.
	m.Expire(t0.Add(2 * time.Hour))
	if got := m.WindowSums(0); !maps.Equal(got, map[string]int64{"a": 742855900 / 2}) {
		t.Fatalf("window sums %v, want a: 371427950", got)
	}
	// An event of 11:45, its slice still in the window, from a record of
	// 12:00 (a consumer lagging behind the clock) is below the base, late
	// in Redis; one whose record came two half-lives after its half-life is
	// late by record time, its slice in the window or not.
	if l := m.Record("t", 0, 1, t0, []codec.Event{gift(1, -15*time.Minute)}); len(l) != 1 || !l[0].InRedis {
		t.Fatalf("below the base: %v", l)
	}
	if l := m.Record("t", 0, 2, t0.Add(3*time.Hour), []codec.Event{gift(1, time.Hour)}); len(l) != 1 || l[0].InRedis {
		t.Fatalf("late by record time: %v", l)
	}
}

func mapsEqual(a, b map[int64]map[string]int64) bool {
	return maps.EqualFunc(a, b, func(x, y map[string]int64) bool { return maps.Equal(x, y) })
}
