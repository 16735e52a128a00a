package board_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
)

// TestAddRejectsLateOnEveryBoard: a record whose gift is late on two boards
// is reported once, naming the first board and counting the other, while
// its event that is on time still counts.
func TestAddRejectsLateOnEveryBoard(t *testing.T) {
	grace := time.Minute
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "gifts-hour", Events: []string{"gift"}, Member: "user_id", Kind: "periodic", Period: "hour", Grace: &grace},
		{Name: "gifts-day", Events: []string{"gift"}, Member: "user_id", Kind: "periodic", Period: "day", Grace: &grace},
	})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 12, 30, 0, 0, time.UTC)
	old := now.Add(-49 * time.Hour).UnixMilli() // two days back: late on both boards
	evs := []codec.Event{
		{RoomID: "r-1", UserID: "u-1", Type: codec.TypeGift, Value: 5, TS: old},
		{RoomID: "r-1", UserID: "u-2", Type: codec.TypeGift, Value: 7, TS: now.UnixMilli()},
	}
	b := board.NewBatch(bs)
	err = b.Add("prod.callbacks.client", 0, 10, now, evs)
	var re *board.RejectError
	if !errors.As(err, &re) || re.Class != "late" || re.Board != "gifts-hour" || re.Event != 0 || re.More != 1 {
		t.Fatalf("Add = %#v, want late on gifts-hour for event 0 and one more", err)
	}
	if !strings.Contains(err.Error(), "and 1 more rejected") {
		t.Errorf("error %q does not count the other rejection", err)
	}
	if b.Len() != 2 {
		t.Errorf("batch holds %d board events, want the on-time gift on both boards", b.Len())
	}
}
