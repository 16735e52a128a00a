package demo

import (
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/codec"
)

// TestBoardGen checks that every generated board event decodes, that all
// six board types appear, that retried events carry an id, that refunds
// (negative gifts) take back a gift sent before, and that scores come in
// tenths.
func TestBoardGen(t *testing.T) {
	g := newBoardGen(BoardFeedConfig{Rooms: 12, Users: 200, Items: 20, Seed: 7})
	dec := codec.NewDecoder(codec.DecodeConfig{})
	now := time.Now()
	types := map[codec.Type]int{}
	sent := map[string]int64{} // room/user → gifts sent, less refunds
	refunds, tenths := 0, 0
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
		switch {
		case ev.Type == codec.TypeGift:
			k := ev.RoomID + "/" + ev.UserID
			if ev.Value < 0 {
				refunds++
				if sent[k] < -ev.Value {
					t.Fatalf("event %d refunds %d of %s, which was sent %d", i, -ev.Value, k, sent[k])
				}
			}
			sent[k] += ev.Value
		case ev.Type == codec.TypeScore && ev.Decimals == 1:
			tenths++
		}
	}
	if refunds == 0 || tenths == 0 {
		t.Errorf("%d refunds and %d scores in tenths in 2000 events, want some of each", refunds, tenths)
	}
	for ty := codec.TypeGift; ty <= codec.TypeTrade; ty++ {
		if types[ty] == 0 {
			t.Errorf("no %v events in 2000", ty)
		}
	}
}
