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

// TestBoardGenRising: the rising room is one of the quieter half, it gets
// a share of the gifts well above a quiet room's, and the next period has
// another.
func TestBoardGenRising(t *testing.T) {
	g := newBoardGen(BoardFeedConfig{Rooms: 12, Users: 200, Items: 20, Seed: 7})
	t0 := time.Date(2027, 1, 1, 12, 0, 0, 0, time.UTC)
	first, next := g.rising(t0.UnixMilli()), g.rising(t0.Add(risingEvery).UnixMilli())
	if first == next || first < "r-1007" || next < "r-1007" {
		t.Fatalf("rising rooms %s then %s: want two of r-1007 … r-1012", first, next)
	}
	dec := codec.NewDecoder(codec.DecodeConfig{})
	gifts := map[string]int{}
	total := 0
	for i := range 4000 {
		_, value, _ := g.next(t0.UnixMilli() + int64(i))
		evs, err := dec.Decode(nil, value, codec.SourceClient, t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if evs[0].Type == codec.TypeGift && evs[0].Value > 0 {
			gifts[evs[0].RoomID]++
			total++
		}
	}
	if gifts[first] < total/5 {
		t.Fatalf("the rising room %s got %d of %d gifts, want at least a fifth", first, gifts[first], total)
	}
}
