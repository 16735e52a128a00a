package sink_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/sink"
)

// TestMembersCap fills a room to its cap, then checks that a new member is
// refused (and reported again when the same part is redelivered), that
// existing members keep changing, and that a leave does not free a slot.
func TestMembersCap(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	s, err := sink.New(c, sink.Config{Env: "test", CacheMembers: sink.DefaultCacheMembers, TopN: 7, RoomTTL: time.Hour, MaxMembers: 3})
	if err != nil {
		t.Fatal(err)
	}
	room := "cap-room"
	offset := int64(0)
	apply := func(evs ...codec.Event) ranking.RoomState {
		t.Helper()
		offset++
		return applyAt(t, s, room, offset, evs...)
	}
	ev := func(user string, typ codec.Type, value int64) codec.Event {
		return codec.Event{RoomID: room, UserID: user, Type: typ, Value: value, TS: base + offset}
	}
	if st := apply(ev("u1", codec.TypeJoin, 0), ev("u2", codec.TypeJoin, 0), ev("u3", codec.TypeJoin, 0)); len(st.Refused) != 0 {
		t.Fatalf("refused %v while filling the room", st.Refused)
	}
	st := apply(ev("u4", codec.TypeJoin, 0), ev("u1", codec.TypeVolume, 700))
	if !slices.Equal(st.Refused, []string{"u4"}) {
		t.Fatalf("refused %v, want [u4]", st.Refused)
	}
	if len(st.Top) == 0 || st.Top[0].UserID != "u1" {
		t.Fatalf("existing member u1 did not take the lead: %v", st.Top)
	}
	// The same part again (a redelivery): skipped by the watermark, and the
	// refusal is reported again.
	again := applyAt(t, s, room, offset, ev("u4", codec.TypeJoin, 0))
	if again.Applied || !slices.Equal(again.Refused, []string{"u4"}) {
		t.Fatalf("redelivered part: applied %v refused %v, want skipped and [u4]", again.Applied, again.Refused)
	}
	// A leave keeps the member's state, so the room stays full.
	apply(ev("u2", codec.TypeLeave, 0))
	if st := apply(ev("u5", codec.TypeJoin, 0)); !slices.Equal(st.Refused, []string{"u5"}) {
		t.Fatalf("after a leave: refused %v, want [u5]", st.Refused)
	}
	if n, _ := c.HLen(ctx, sink.RoomKeys("test", room).Members).Result(); n != 3 {
		t.Fatalf("room holds %d members, want the cap of 3", n)
	}
	if _, err := sink.New(c, sink.Config{Env: "test", CacheMembers: sink.DefaultCacheMembers, MaxMembers: -1}); err == nil {
		t.Fatal("a negative cap was accepted")
	}
}

// applyAt applies events as one part of partition 0 ending at offset.
func applyAt(t *testing.T, s *sink.Store, room string, offset int64, evs ...codec.Event) ranking.RoomState {
	t.Helper()
	fold := map[string]*ranking.MemberState{}
	var order []string
	for i := range evs {
		if fold[evs[i].UserID] == nil {
			fold[evs[i].UserID] = new(ranking.MemberState)
			order = append(order, evs[i].UserID)
		}
		fold[evs[i].UserID].Apply(&evs[i])
	}
	p := ranking.Part{Topic: "test.callbacks.rtc", Partition: 0, Last: offset}
	for _, u := range order {
		p.Members = append(p.Members, ranking.MemberUpdate{UserID: u, State: *fold[u]})
	}
	st, err := s.Apply(context.Background(), []ranking.RoomUpdate{{Room: room, Parts: []ranking.Part{p}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st[0]
}
