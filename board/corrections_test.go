package board_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// correctionBoards: negative values with the default floor and without
// one, decimals of every scale, and a board that refuses both.
func correctionBoards(t testing.TB) []*boarddef.Board {
	t.Helper()
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "refunds", Events: []string{"gift"}, Member: "room_id", Kind: "periodic", Period: "hour",
			Tie: "first-reached", Retention: 3, AllowNegative: true, Scale: 10, Grace: dur(30 * time.Second)},
		{Name: "net", Events: []string{"score"}, Member: "user_id", Kind: "periodic", Period: "day", TZ: "Europe/Berlin",
			AllowNegative: true, Floor: "none", Scale: 100},
		{Name: "strict", Events: []string{"gift", "score"}, Member: "user_id", Kind: "periodic", Period: "day", Tie: "first-reached"},
		{Name: "rolling-net", Events: []string{"gift"}, Member: "room_id", Kind: "rolling", Slice: time.Minute, Slices: 5,
			Tie: "first-reached", AllowNegative: true, Floor: "none", Scale: 10, Grace: dur(20 * time.Second)},
		{Name: "windows-own", Events: []string{"score"}, Member: "room_id", Kind: "windows", Slice: time.Minute,
			Windows:       []boarddef.Window{{Length: 4 * time.Minute, Slice: 2 * time.Minute}, {Length: 15 * time.Minute, Slice: 3 * time.Minute}},
			AllowNegative: true, Floor: "none", Scale: 1000, Grace: dur(20 * time.Second)},
		{Name: "windows-floor", Events: []string{"score", "gift"}, Member: "user_id", Kind: "windows", Slice: time.Minute,
			Windows: boarddef.Lengths(3*time.Minute, 10*time.Minute), AllowNegative: true, Floor: "-2.5", Scale: 1000},
	})
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// correctionEvent makes gifts and scores with negative and decimal values
// and remove events (now and then for a board that does not exist).
func correctionEvent(s *sim, at time.Time) codec.Event {
	r := s.rng
	ev := codec.Event{RoomID: fmt.Sprintf("r%d", r.IntN(4)), UserID: fmt.Sprintf("u%d", r.IntN(5)),
		TS: at.Add(-time.Duration(r.Int64N(int64(70 * time.Second)))).UnixMilli()}
	if r.IntN(12) == 0 {
		ev.Type = codec.TypeRemove
		names := []string{"refunds", "net", "strict", "rolling-net", "windows-floor", "windows-own", "refunds", "nope"}
		ev.Board = names[r.IntN(len(names))]
		return ev
	}
	ev.Type = codec.TypeGift
	if r.IntN(2) == 0 {
		ev.Type = codec.TypeScore
	}
	for ev.Value == 0 {
		ev.Value = r.Int64N(60) - 20
	}
	switch r.IntN(4) {
	case 0:
		ev.Value, ev.Decimals = ev.Value*10+r.Int64N(10), 1
	case 1:
		ev.Value, ev.Decimals = ev.Value*100+r.Int64N(100), 2
	}
	if ev.Value == 0 {
		ev.Value = 7
	}
	if r.IntN(5) == 0 {
		s.ids++
		ev.ID = fmt.Sprintf("id-%d", s.ids)
	}
	return ev
}

// TestCorrectionsAgainstModel: negative values, floors, decimals and
// remove events on one partition (a removal applies at its place in the
// partition's order) with redeliveries, overlapping ones (re-sent event
// by event, a removal in order), idle gaps and expiry: every ranking equals
// the model's, and the values the boards refuse (negative on a board
// without allow-negative, finer than the scale) and removals of unknown
// boards send the same records to the DLQ.
func TestCorrectionsAgainstModel(t *testing.T) {
	r := testenv.StartRedis(t)
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if err := r.Client().FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			s := newSimOf(t, r.Client(), seed, time.Date(2027, 3, 27, 22, 0, 0, 0, time.UTC), correctionBoards(t))
			s.parts = 1
			s.gen = func(at time.Time) codec.Event { return correctionEvent(s, at) }
			s.run(300)
			tot := s.total
			t.Logf("applied %d, skipped %d, splits %d, late or refused records %d", tot.Applied, tot.Skipped, tot.Splits, len(s.lateModel))
			if tot.Splits == 0 || tot.Skipped == 0 || len(s.lateModel) == 0 {
				t.Errorf("a path was not exercised: %+v", tot)
			}
		})
	}
}

// TestFirstReachedAfterDecrease pins what first-reached means after a
// decrease: reached_at is the time of the member's newest counted event,
// decreases included, so of two members at the same total the one whose
// last change came first ranks first; a floor shows the clamped total
// with the same reached_at.
func TestFirstReachedAfterDecrease(t *testing.T) {
	rdb := testenv.StartRedis(t).Client()
	bs := correctionBoards(t)
	st := board.NewStore(rdb, "test", bs)
	m := boardmodel.New(bs)
	t0 := time.Date(2027, 5, 3, 10, 0, 0, 0, time.UTC)
	st.SetClock(func() time.Time { return t0.Add(30 * time.Minute) })
	at := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	recs := [][]codec.Event{
		{{Type: codec.TypeGift, RoomID: "r-a", UserID: "u", Value: 10, TS: at(time.Minute)}},     // a: 10 at 1m
		{{Type: codec.TypeGift, RoomID: "r-b", UserID: "u", Value: 15, TS: at(2 * time.Minute)}}, // b: 15 at 2m
		{{Type: codec.TypeGift, RoomID: "r-b", UserID: "u", Value: -5, TS: at(3 * time.Minute)}}, // b: 10 at 3m (the refund)
		{{Type: codec.TypeGift, RoomID: "r-c", UserID: "u", Value: -3, TS: at(4 * time.Minute)}}, // c: -3 shows 0 at 4m
		{{Type: codec.TypeGift, RoomID: "r-d", UserID: "u", Value: 1, Decimals: 1, TS: at(5 * time.Minute)}},
		{{Type: codec.TypeGift, RoomID: "r-d", UserID: "u", Value: -1, Decimals: 1, TS: at(6 * time.Minute)}}, // d: 0 at 6m
	}
	b := st.NewBatch()
	for i, evs := range recs {
		b.Cover("t", 0, int64(i), int64(i))
		_ = b.Add("t", 0, int64(i), t0.Add(6*time.Minute+10*time.Second), evs) // strict refuses the negative ones
		m.Record("t", 0, int64(i), t0.Add(6*time.Minute+10*time.Second), evs)
	}
	if _, err := st.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	page, err := st.Top(context.Background(), "refunds", "", "", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range page.Members {
		got = append(got, fmt.Sprintf("%s %s %d", e.Member, bs[0].FormatUnits(e.Total), (e.ReachedAt-t0.UnixMilli())/60000))
	}
	want := []string{"r-a 10 1", "r-b 10 3", "r-c 0 4", "r-d 0 6"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ranking %v, want %v", got, want)
	}
	model := m.Ranking(0, page.Period, 0)
	for i, e := range model {
		if e != boardmodel.Entry(page.Members[i]) {
			t.Fatalf("model %v, redis %v", model, page.Members)
		}
	}
}

// TestDecimalsAndRefusals: totals of a scale-10 board read back exactly;
// a value finer than the scale and a negative value on a board without
// allow-negative are refused with a reason naming the field.
func TestDecimalsAndRefusals(t *testing.T) {
	bs := correctionBoards(t)
	st := board.NewStore(testenv.StartRedis(t).Client(), "test", bs)
	now := time.Date(2027, 5, 3, 10, 30, 0, 0, time.UTC)
	st.SetClock(func() time.Time { return now })
	b := st.NewBatch()
	add := func(off int64, ev codec.Event) error {
		ev.RoomID, ev.UserID, ev.TS = "r-1", "u-1", now.UnixMilli()
		b.Cover("t", 0, off, off)
		return b.Add("t", 0, off, now, []codec.Event{ev})
	}
	for i, c := range []struct {
		ev   codec.Event
		want string
	}{
		{codec.Event{Type: codec.TypeGift, Value: 125, Decimals: 1}, "board strict: event[0]: value: 12.5 is finer than the board's scale 1 (at most 0 decimal places)"},
		{codec.Event{Type: codec.TypeGift, Value: 1250, Decimals: 2}, "board strict: event[0]: value: 12.50 is finer than the board's scale 1 (at most 0 decimal places)"},
		{codec.Event{Type: codec.TypeGift, Value: 1, Decimals: 2}, "board refunds: event[0]: value: 0.01 is finer than the board's scale 10 (at most 1 decimal places) (and 2 more rejected on this or other boards)"},
		{codec.Event{Type: codec.TypeGift, Value: -4}, "board strict: event[0]: value: -4 is negative and the board does not allow negative values (allow-negative: true)"},
	} {
		err := add(int64(i), c.ev)
		if err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %s", c.ev, err, c.want)
		}
	}
	if _, err := st.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	page, err := st.Top(context.Background(), "refunds", "", "", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	// 12.5 + 12.50 - 4 (0.01 refused) = 21
	if len(page.Members) != 1 || bs[0].FormatUnits(page.Members[0].Total) != "21" {
		t.Fatalf("refunds: %+v", page.Members)
	}
}
