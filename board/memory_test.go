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
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
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

// redisCPU returns the CPU time redis-server has used (INFO cpu: user +
// system).
func redisCPU(t testing.TB, rdb *redis.Client) time.Duration {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, l := range strings.Split(info, "\r\n") {
		for _, f := range []string{"used_cpu_user:", "used_cpu_sys:"} {
			if v, ok := strings.CutPrefix(l, f); ok {
				x, _ := strconv.ParseFloat(v, 64)
				sum += x
			}
		}
	}
	return time.Duration(sum * float64(time.Second))
}

// TestMemoryPerMember measures Redis memory per ranked member (docs/leaderboards.md
// "Memory per member"): a weekly first-reached board with 1M users, and a
// windows board of 10k items over 60 one-minute slices and five windows.
// It only reports; set ROSTRUM_MEASURE=1 to run it (-run
// TestMemoryPerMember/weekly-score for one board).
func TestMemoryPerMember(t *testing.T) {
	if os.Getenv("ROSTRUM_MEASURE") != "1" {
		t.Skip("set ROSTRUM_MEASURE=1 to measure")
	}
	rdb := testenv.StartRedis(t).Client()
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "weekly-score", Events: []string{"score"}, Member: "user_id", Kind: "periodic", Period: "week",
			TZ: "Asia/Shanghai", Tie: "first-reached"},
		{Name: "item-trades", Events: []string{"trade"}, Member: "room_id", Kind: "windows", Slice: time.Minute,
			Windows: boarddef.Lengths(3*time.Minute, 10*time.Minute, time.Hour, 6*time.Hour, 24*time.Hour)},
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

// TestMemoryWindows24h measures Redis memory per active item of seed 002's
// board (windows 3m, 10m, 1h, 6h, 24h) after 24 hours of traffic, every
// item trading in every minute, with expiry every minute: with every window
// on 1-minute slices (the 24h window keeps 1,440 of them), and with each
// window on a slice of its own (examples/boards.yaml). It also reports
// the CPU time Redis spent applying (per event) and expiring (per tick).
// It only reports; set ROSTRUM_MEASURE=1 to run it (-run
// 'TestMemoryWindows24h/per-window' for the second board).
// ROSTRUM_MEASURE_ITEMS=n measures n items instead, with Redis told to
// keep every hash and sorted set as a hash table and skip list (the
// encodings of more than 512 and 128 entries), as with many items. The
// growth includes a part that does not depend on the items (about 230 kB:
// buffers the scripts' calls leave allocated); two runs of different n
// give the cost of one more item, (used(n2) − used(n1)) / (n2 − n1): for
// the 1-minute board, whose expiry decodes 1,440 slices per item, with a
// hundred items rather than a thousand.
func TestMemoryWindows24h(t *testing.T) {
	if os.Getenv("ROSTRUM_MEASURE") != "1" {
		t.Skip("set ROSTRUM_MEASURE=1 to measure")
	}
	items := 1000 // more than 512: slice hashes are hash tables, as with many items
	rdb := testenv.StartRedis(t).Client()
	ctx := context.Background()
	var encodings [][2]string
	if n, err := strconv.Atoi(os.Getenv("ROSTRUM_MEASURE_ITEMS")); err == nil && n > 0 {
		items = n
		encodings = [][2]string{{"hash-max-listpack-entries", "0"}, {"zset-max-listpack-entries", "0"}}
	}
	for _, kv := range encodings {
		if err := rdb.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	seed002 := boarddef.Lengths(3*time.Minute, 10*time.Minute, time.Hour, 6*time.Hour, 24*time.Hour)
	own := []boarddef.Window{{Length: 3 * time.Minute}, {Length: 10 * time.Minute},
		{Length: time.Hour, Slice: 5 * time.Minute}, {Length: 6 * time.Hour, Slice: 30 * time.Minute}, {Length: 24 * time.Hour, Slice: time.Hour}}
	for _, tc := range []struct {
		name    string
		windows []boarddef.Window
	}{{"1m slices", seed002}, {"per-window slices", own}} {
		t.Run(tc.name, func(t *testing.T) {
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			bs, err := boarddef.Compile([]boarddef.Config{{Name: "item-trades", Events: []string{"trade"}, Member: "room_id",
				Kind: "windows", Slice: time.Minute, Windows: tc.windows, Grace: dur(10 * time.Second)}})
			if err != nil {
				t.Fatal(err)
			}
			st := board.NewStore(rdb, "prod", bs)
			// Only the board's keys are measured: the scripts are loaded
			// first, and the slow log (which would keep 128 of the long
			// script calls, their arguments included) is off.
			if err := st.LoadScripts(ctx); err != nil {
				t.Fatal(err)
			}
			if err := rdb.ConfigSet(ctx, "slowlog-log-slower-than", "-1").Err(); err != nil {
				t.Fatal(err)
			}
			before := usedMemory(t, rdb)
			start := time.Date(2027, 5, 3, 0, 0, 0, 0, time.UTC)
			off := int64(0)
			b := st.NewBatch()
			var applyCPU, expireCPU time.Duration
			for m := range 24*60 + 30 {
				at := start.Add(time.Duration(m) * time.Minute)
				b.Reset()
				for i := range items {
					ev := codec.Event{RoomID: fmt.Sprintf("item-%06d", i), UserID: "u", Type: codec.TypeTrade, Value: 100, TS: at.Add(time.Second).UnixMilli()}
					if err := b.Add("t", 0, off, at.Add(2*time.Second), []codec.Event{ev}); err != nil {
						t.Fatal(err)
					}
					off++
				}
				c0 := redisCPU(t, rdb)
				if _, err := st.Apply(ctx, b); err != nil {
					t.Fatal(err)
				}
				c1 := redisCPU(t, rdb)
				if _, err := st.Expire(ctx, at.Add(30*time.Second)); err != nil {
					t.Fatal(err)
				}
				applyCPU += c1 - c0
				expireCPU += redisCPU(t, rdb) - c1
			}
			used := usedMemory(t, rdb) - before
			keys := rdb.DBSize(ctx).Val()
			t.Logf("%s: %d items after 24h30m, %d keys, %d bytes, %d B per item", tc.name, items, keys, used, used/int64(items))
			ticks := int64(24*60 + 30)
			t.Logf("%s: Redis CPU %v applying (%v per event), %v expiring (%v per tick)", tc.name, applyCPU.Round(time.Millisecond),
				applyCPU/time.Duration(ticks*int64(items)), expireCPU.Round(time.Millisecond), (expireCPU / time.Duration(ticks)).Round(time.Microsecond))
		})
	}
}
