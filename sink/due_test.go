package sink_test

import (
	"context"
	"slices"
	"testing"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/ranking"
)

// TestHysteresisStateStored: a state-only store keeps the seq and list and
// publishes nothing; the state is part of the compare-and-set; Read returns
// it with the current scores of the stable members ("unranked" for one that
// left).
func TestHysteresisStateStored(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	s := newSink(t, c)
	join := codec.Event{Type: codec.TypeJoin, TS: base}
	if _, err := s.Apply(ctx, []ranking.RoomUpdate{update("r1", "a", 0, 1, join), update("r1", "b", 0, 2, join)}, nil); err != nil {
		t.Fatal(err)
	}
	st, _ := s.Read(ctx, []string{"r1"})
	ok, err := s.StoreStable(ctx, []ranking.StableUpdate{{Room: "r1", PrevSeq: 0, Version: st[0].Version, List: []string{"a", "b"}, Out: []byte("o1"), State: "1|x=5|"}})
	if err != nil || !ok[0] {
		t.Fatalf("store: %v %v", ok, err)
	}
	st, _ = s.Read(ctx, []string{"r1"})
	if st[0].Seq != 1 || st[0].HState != "1|x=5|" || len(st[0].StableScores) != 2 || st[0].StableScores[0] <= 0 {
		t.Fatalf("after store: %+v", st[0])
	}
	// A state read before the last store is refused.
	ok, _ = s.StoreStable(ctx, []ranking.StableUpdate{{Room: "r1", PrevSeq: 1, Version: st[0].Version, PrevState: "", State: "1|y=6|", StateOnly: true}})
	if ok[0] {
		t.Fatal("a state from a stale read was stored")
	}
	// State only: seq, list and pending output stay.
	ok, _ = s.StoreStable(ctx, []ranking.StableUpdate{{Room: "r1", PrevSeq: 1, Version: st[0].Version, PrevState: "1|x=5|", State: "", StateOnly: true, List: []string{"z"}}})
	if !ok[0] {
		t.Fatal("state-only store refused")
	}
	// b leaves: its score reads as unranked.
	if _, err := s.Apply(ctx, []ranking.RoomUpdate{update("r1", "b", 1, 3, codec.Event{Type: codec.TypeLeave, TS: base + 1})}, nil); err != nil {
		t.Fatal(err)
	}
	st, _ = s.Read(ctx, []string{"r1"})
	if st[0].Seq != 1 || !slices.Equal(st[0].Stable, []string{"a", "b"}) || st[0].HState != "" || string(st[0].Pending) != "o1" ||
		st[0].StableScores[1] != ranking.Unranked || st[0].StableScores[0] != st[0].Top[0].Score {
		t.Fatalf("after state-only store and a leave: %+v", st[0])
	}
}

// TestDueSet: StoreStable enters deadlines, only ever earlier; SettleDue
// moves or removes an entry only if it is still the one read; DueRooms
// lists the rooms due by a time, earliest first.
func TestDueSet(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	s := newSink(t, c)
	for _, u := range []ranking.StableUpdate{
		{Room: "r1", State: "1|x=1|", StateOnly: true, Due: 3000},
		{Room: "r2", State: "1|x=1|", StateOnly: true, Due: 1000},
	} {
		if _, err := s.StoreStable(ctx, []ranking.StableUpdate{u}); err != nil {
			t.Fatal(err)
		}
	}
	// A later deadline does not move r2's entry; an earlier one moves r1's,
	// even from a store that lost its compare-and-set.
	ok, _ := s.StoreStable(ctx, []ranking.StableUpdate{
		{Room: "r2", PrevState: "1|x=1|", State: "1|x=2|", StateOnly: true, Due: 5000},
		{Room: "r1", PrevState: "stale", State: "1|x=2|", StateOnly: true, Due: 2000},
	})
	if !ok[0] || ok[1] {
		t.Fatalf("stored %v", ok)
	}
	due, err := s.DueRooms(ctx, 2500, 10)
	if err != nil || !slices.Equal(due, []ranking.DueRoom{{Room: "r2", At: 1000}, {Room: "r1", At: 2000}}) {
		t.Fatalf("due by 2500: %v %v", due, err)
	}
	// r2 settles to its next deadline; r1's entry moved meanwhile, so its
	// settle does nothing.
	if err := s.ArmDue(ctx, []ranking.DueRoom{{Room: "r1", At: 1500}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SettleDue(ctx, due, []int64{4000, 0}); err != nil {
		t.Fatal(err)
	}
	due, _ = s.DueRooms(ctx, 10000, 10)
	if !slices.Equal(due, []ranking.DueRoom{{Room: "r1", At: 1500}, {Room: "r2", At: 4000}}) {
		t.Fatalf("after settle: %v", due)
	}
	if err := s.SettleDue(ctx, due, []int64{0, 0}); err != nil {
		t.Fatal(err)
	}
	if due, _ = s.DueRooms(ctx, 10000, 10); len(due) != 0 {
		t.Fatalf("after removal: %v", due)
	}
	states, err := s.DueStates(ctx, []string{"r2", "r1", "none"})
	if err != nil || !slices.Equal(states, []string{"1|x=2|", "1|x=1|", ""}) {
		t.Fatalf("states %q %v", states, err)
	}
}
