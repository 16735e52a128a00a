package boardmodel_test

import (
	"slices"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/boardmodel"
)

// TestRollingByHand checks the model against totals worked out by hand: a
// 3-slice rolling board of 1-minute slices with first-reached ties.
func TestRollingByHand(t *testing.T) {
	g := time.Duration(0)
	bs, err := board.Compile([]board.Config{{Name: "r", Events: []string{"gift"}, Member: "room_id", Kind: "rolling",
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
