package board_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testenv"
)

func usedMemory(t testing.TB, rdb *redis.Client) int64 {
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("no used_memory")
	return 0
}

// TestMemoryPerMember measures Redis memory per ranked member (README
// "Leaderboards"): a weekly first-reached board with 1M users, and a
// windows board of 10k items over 60 one-minute slices and five windows.
// It only reports; set ROSTRUM_MEASURE=1 to run it (-run
// TestMemoryPerMember/weekly-score for one board).
func TestMemoryPerMember(t *testing.T) {
	if os.Getenv("ROSTRUM_MEASURE") != "1" {
		t.Skip("set ROSTRUM_MEASURE=1 to measure")
	}
	rdb := testenv.StartRedis(t).Client()
	bs, err := board.Compile([]board.Config{
		{Name: "weekly-score", Events: []string{"score"}, Member: "user_id", Kind: "periodic", Period: "week",
			TZ: "Asia/Shanghai", Tie: "first-reached"},
		{Name: "item-trades", Events: []string{"trade"}, Member: "room_id", Kind: "windows", Slice: time.Minute,
			Windows: board.Lengths(3*time.Minute, 10*time.Minute, time.Hour, 6*time.Hour, 24*time.Hour)},
	})
	if err != nil {
		t.Fatal(err)
	}
	st := board.NewStore(rdb, "prod", bs)
	now := time.Now()
	measure := func(name string, members, perMember int, ev func(m, k int) codec.Event) {
		t.Run(name, func(t *testing.T) { measureOne(t, rdb, st, name, members, perMember, now, ev) })
	}
	ts := now.Add(-time.Second).UnixMilli()
	measure("weekly-score", 1000000, 3, func(m, k int) codec.Event {
		return codec.Event{RoomID: "r", UserID: fmt.Sprintf("u-%07d", m), Type: codec.TypeScore, Value: int64(1 + k), TS: ts - int64(k)}
	})
	measure("item-trades", 10000, 60, func(m, k int) codec.Event {
		return codec.Event{RoomID: fmt.Sprintf("item-%06d", m), UserID: "u", Type: codec.TypeTrade, Value: 100, TS: now.Add(-time.Duration(k) * time.Minute).UnixMilli()}
	})
}

// measureOne applies members × perMember events to a board of st and logs
// the memory Redis grew by, per member.
func measureOne(t *testing.T, rdb *redis.Client, st *board.Store, name string, members, perMember int, now time.Time, ev func(m, k int) codec.Event) {
	ctx := context.Background()
	before := usedMemory(t, rdb)
	b := st.NewBatch()
	off := int64(0)
	for m := range members {
		for k := range perMember {
			if err := b.Add("t", 0, off, now, []codec.Event{ev(m, k)}); err != nil {
				t.Fatal(err)
			}
			off++
		}
		if b.Len() >= 5000 {
			if _, err := st.Apply(ctx, b); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	if _, err := st.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	used := usedMemory(t, rdb) - before
	t.Logf("%s: %d members, %d bytes, %d B per member", name, members, used, used/int64(members))
}
