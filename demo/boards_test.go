package demo

import (
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/codec"
)

// TestBoardGen checks that every generated board event decodes, that all
// six board types appear, and that retried events carry an id.
func TestBoardGen(t *testing.T) {
	g := newBoardGen(BoardFeedConfig{Rooms: 12, Users: 200, Items: 20, Seed: 7})
	dec := codec.NewDecoder(codec.DecodeConfig{})
	now := time.Now()
	types := map[codec.Type]int{}
	for i := range 2000 {
		key, value, retry := g.next(now.UnixMilli() + int64(i))
		evs, err := dec.Decode(nil, value, codec.SourceClient, now.Add(time.Minute))
		if err != nil {
			t.Fatalf("event %d %s: %v", i, value, err)
		}
		ev := evs[0]
		if !ev.Type.Board() {
			t.Fatalf("event %d is a %v, want a board type", i, ev.Type)
		}
		if key != ev.RoomID {
			t.Fatalf("event %d keyed %q, room %q", i, key, ev.RoomID)
		}
		if retry != (ev.ID != "") {
			t.Fatalf("event %d: retry %v with id %q", i, retry, ev.ID)
		}
		types[ev.Type]++
	}
	for ty := codec.TypeGift; ty <= codec.TypeTrade; ty++ {
		if types[ty] == 0 {
			t.Errorf("no %v events in 2000", ty)
		}
	}
}
