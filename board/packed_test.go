package board_test

import (
	"context"
	"fmt"
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

// seed002Windows are seed 002's windows, each on a slice of its own
// (examples/boards.yaml).
var seed002Windows = []boarddef.Window{{Length: 3 * time.Minute, Slice: time.Minute}, {Length: 10 * time.Minute, Slice: time.Minute},
	{Length: time.Hour, Slice: 5 * time.Minute}, {Length: 6 * time.Hour, Slice: 30 * time.Minute}, {Length: 24 * time.Hour, Slice: time.Hour}}

// packedBoards: seed 002's board (first-reached ties, ids), and the same
// windows with negative values and no floor.
func packedBoards(t testing.TB) []*boarddef.Board {
	t.Helper()
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "items", Events: []string{"trade"}, Member: "room_id", Kind: "windows", Windows: seed002Windows,
			Tie: "first-reached", Grace: dur(10 * time.Second)},
		{Name: "items-net", Events: []string{"gift"}, Member: "room_id", Kind: "windows", Windows: seed002Windows,
			AllowNegative: true, Floor: "none", Grace: dur(10 * time.Second)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// packedEvent makes trades (with ids now and then, and producers'
// retries), gifts of either sign and remove events, mostly on time, some
// hours late.
func packedEvent(s *sim, at time.Time) codec.Event {
	r := s.rng
	if len(s.sent) > 0 && r.IntN(8) == 0 {
		return s.sent[r.IntN(len(s.sent))]
	}
	ev := codec.Event{RoomID: fmt.Sprintf("r%d", r.IntN(7)), UserID: "u", Type: codec.TypeTrade, Value: 1 + r.Int64N(40)}
	switch r.IntN(14) {
	case 0:
		ev.Type, ev.Board, ev.Value = codec.TypeRemove, []string{"items", "items-net"}[r.IntN(2)], 0
	case 1, 2, 3, 4:
		ev.Type, ev.Value = codec.TypeGift, r.Int64N(60)-25
	}
	lag := time.Duration(r.Int64N(int64(80 * time.Second)))
	switch r.IntN(15) {
	case 0:
		lag = time.Duration(r.Int64N(int64(30 * time.Hour))) // late for some windows, or all
	case 1:
		lag = 24*time.Hour + time.Duration(r.Int64N(int64(70*time.Minute))) // about to leave the 24h window
	}
	ev.TS = at.Add(-lag).UnixMilli()
	if b := s.now.Add(-10 * time.Second).Truncate(time.Hour); ev.Type != codec.TypeRemove && b.Add(10*time.Second).After(at) && r.IntN(2) == 0 {
		// A record produced before an hour boundary and read after it,
		// its event in the hour that the 24h window, the last to hold
		// it, lets go at that boundary: on time by the record's time,
		// late in Redis once Expire has passed the boundary.
		ev.TS = b.Add(-24*time.Hour + time.Duration(r.Int64N(int64(time.Hour)))).UnixMilli()
	}
	if ev.Type == codec.TypeTrade && r.IntN(4) == 0 {
		s.ids++
		ev.ID = fmt.Sprintf("id-%d", s.ids)
		s.sent = append(s.sent, ev)
	}
	return ev
}

// checkPacked checks the windows boards' layout: no slice hashes; every
// member state is packed (lua/wstate.lua's head) and is listed in the expiry
// index at a time after expired, the time of the last Expire.
func checkPacked(t *testing.T, rdb redis.UniversalClient, bs []*boarddef.Board, expired time.Time) {
	t.Helper()
	ctx := context.Background()
	for _, b := range bs {
		P := "rostrum:test:board:{" + b.Name() + "}:"
		states := rdb.HGetAll(ctx, P+"m").Val()
		listed := map[string]bool{}
		for due, l := range rdb.HGetAll(ctx, P+"e").Val() {
			ms, err := strconv.ParseInt(due, 10, 64)
			if err != nil || ms <= expired.Add(-b.Grace()).UnixMilli() {
				t.Fatalf("%s: expiry index listing at %q, expired through %v", b.Name(), due, expired.Add(-b.Grace()))
			}
			for _, m := range strings.Fields(l) {
				listed[m] = true
			}
		}
		for m, st := range states {
			if !listed[m] || !strings.HasPrefix(st, "\x00") {
				t.Fatalf("%s: member %s (state %q) listed in the expiry index: %v", b.Name(), m, st, listed[m])
			}
		}
		for _, set := range []string{"s", "q5:s", "q30:s", "q60:s"} {
			for _, sl := range rdb.ZRange(ctx, P+set, 0, -1).Val() {
				if n := rdb.Exists(ctx, P+set+":"+sl).Val(); n != 0 {
					t.Fatalf("%s: slice hash %s:%s", b.Name(), set, sl)
				}
			}
		}
	}
}

// TestWindowsPackedAgainstModel feeds seed 002's windows (five slice
// lengths) with traffic on one partition (so that a removal applies at its
// place in the partition's order, as in the model; redeliveries in part,
// producers' retries of events with ids, removals, negative values,
// events late for some windows or all), expiring from several callers at
// once, and compares every window with internal/testkit/boardmodel at each step;
// then lets 26 hours pass without events, a tick every 20 minutes, so
// that each window lets its slices go one boundary at a time, and finally
// finds nothing left. On a single node and on a 3-master cluster.
func TestWindowsPackedAgainstModel(t *testing.T) {
	for _, where := range []string{"node", "cluster"} {
		t.Run(where, func(t *testing.T) {
			var rdb redis.UniversalClient
			if where == "node" {
				rdb = testenv.StartRedis(t).Client()
			} else {
				rdb = testenv.StartRedisCluster(t).Client()
			}
			bs := packedBoards(t)
			s := newSimOf(t, rdb, 3, time.Date(2027, 5, 3, 22, 0, 0, 0, time.UTC), bs)
			s.gen = func(at time.Time) codec.Event { return packedEvent(s, at) }
			var expired time.Time // the last Expire
			steps := 240
			if where == "cluster" {
				steps = 120
			}
			for step := range steps {
				r := s.rng
				s.now = s.now.Add(time.Duration(r.Int64N(int64(4 * time.Minute))))
				if r.IntN(12) == 0 {
					s.now = s.now.Add(time.Duration(r.Int64N(int64(3 * time.Hour)))) // idle across boundaries
				}
				if r.IntN(2) == 0 {
					s.expire(1 + r.IntN(3))
					expired = s.now
				}
				var recs []rec
				if old := s.log[0]; len(old) > 0 && r.IntN(6) == 0 {
					from := max(0, len(old)-1-r.IntN(4))
					recs = append(recs, old[from:]...) // redelivered, then new ones
				}
				recs = append(recs, s.produce(0, r.IntN(8))...)
				s.apply(recs)
				if step%4 == 3 {
					s.check()
					checkPacked(t, rdb, bs, expired)
				}
			}
			// No more events: each window lets go of its slices at its
			// own boundaries.
			for range 26 * 3 {
				s.now = s.now.Add(20 * time.Minute)
				s.expire(1 + s.rng.IntN(2))
				expired = s.now
				s.check()
				checkPacked(t, rdb, bs, expired)
			}
			tot := s.total
			t.Logf("applied %d, skipped %d, duplicates %d, splits %d, late in redis %d; expiry: %+v",
				tot.Applied, tot.Skipped, tot.Duplicate, tot.Splits, len(tot.Late), s.expired)
			if tot.Applied == 0 || tot.Duplicate == 0 || tot.Splits == 0 || len(tot.Late) == 0 || s.expired.Subtracted == 0 || s.expired.Removed == 0 || s.expired.Deleted == 0 {
				t.Errorf("a path was not exercised: %+v %+v", tot, s.expired)
			}
			ctx := context.Background()
			for _, b := range bs {
				P := "rostrum:test:board:{" + b.Name() + "}:"
				keys := []string{P + "m", P + "e", P + "s", P + "q5:s", P + "q30:s", P + "q60:s"}
				for j := range b.Windows() {
					keys = append(keys, fmt.Sprintf("%sz:%d", P, j))
				}
				for _, k := range keys {
					if n := rdb.Exists(ctx, k).Val(); n != 0 {
						t.Errorf("%s left after every window drained", k)
					}
				}
			}
		})
	}
}

// TestWindowsPackedSumEdges: slice and window sums at ±(2^53 − 1) are
// packed and read back exactly, subtracted exactly when their slice leaves
// a window, and an event that would take a sum beyond is not counted
// (saturated) rather than rounded.
func TestWindowsPackedSumEdges(t *testing.T) {
	ctx := context.Background()
	st, bs, rdb := bigWindowsStore(t)
	t0 := time.Date(2027, 5, 3, 10, 0, 0, 0, time.UTC)
	const max = codec.MaxAmount
	off := int64(0)
	apply := func(at time.Duration, evs ...codec.Event) board.Result {
		t.Helper()
		b := st.NewBatch()
		for i := range evs {
			evs[i].Type, evs[i].UserID, evs[i].TS = codec.TypeGift, "u", t0.Add(at).UnixMilli()
		}
		b.Cover("t", 0, off, off)
		if err := b.Add("t", 0, off, t0.Add(at), evs); err != nil {
			t.Fatal(err)
		}
		off++
		res, err := st.Apply(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	totals := func(now time.Duration) map[string][2]int64 {
		t.Helper()
		st.SetClock(func() time.Time { return t0.Add(now) })
		out := map[string][2]int64{}
		for j, w := range bs[0].Windows() {
			page, err := st.Top(ctx, "big", "", w, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Members {
				v := out[e.Member]
				v[j] = e.Total
				out[e.Member] = v
			}
		}
		return out
	}
	// a: max−1 at 10:00 and 1 at 10:01 (the 2m window's 1m slices
	// differ, the 1h window's 30m slice is one); b: −max; c: −(max−1) then
	// −1; d: max then 1 more (refused); e: 2^52 − 1 then 1 in the same
	// slices (the packing's short and long forms of a sum, packed.lua).
	const p52 = 1 << 52
	apply(0, codec.Event{RoomID: "a", Value: max - 1}, codec.Event{RoomID: "b", Value: -max}, codec.Event{RoomID: "c", Value: -(max - 1)},
		codec.Event{RoomID: "d", Value: max})
	apply(30*time.Second, codec.Event{RoomID: "e", Value: p52 - 1})
	apply(40*time.Second, codec.Event{RoomID: "e", Value: 1})
	res := apply(time.Minute, codec.Event{RoomID: "a", Value: 1}, codec.Event{RoomID: "c", Value: -1}, codec.Event{RoomID: "d", Value: 1})
	if res.Saturated != 1 || res.Applied != 2 {
		t.Fatalf("second batch: %+v, want 2 applied and d's 1 saturated", res)
	}
	want := map[string][2]int64{"a": {max, max}, "b": {-max, -max}, "c": {-max, -max}, "d": {max, max}, "e": {p52, p52}}
	if got := totals(90 * time.Second); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("at 10:01:30: %v, want %v", got, want)
	}
	// At 10:02:00 the 2m window lets 10:00 go: a keeps 1, c −1, b and d
	// leave it; the 1h window keeps everything.
	if _, err := st.Expire(ctx, t0.Add(2*time.Minute+time.Second)); err != nil {
		t.Fatal(err)
	}
	want = map[string][2]int64{"a": {1, max}, "b": {0, -max}, "c": {-1, -max}, "d": {0, max}, "e": {0, p52}}
	if got := totals(2 * time.Minute); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("at 10:02: %v, want %v", got, want)
	}
	// Another max−1 for a in 10:01 would take the 2m window to max
	// (allowed) and the 1h window beyond (refused, whole).
	if res := apply(time.Minute+time.Second, codec.Event{RoomID: "a", Value: max - 1}); res.Saturated != 1 || res.Applied != 0 {
		t.Fatalf("beyond the 1h window's range: %+v", res)
	}
	if _, err := st.Expire(ctx, t0.Add(61*time.Minute+time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := totals(61 * time.Minute); len(got) != 0 {
		t.Fatalf("after the hour: %v", got)
	}
	if n := rdb.HLen(ctx, "rostrum:test:board:{big}:m").Val() + rdb.HLen(ctx, "rostrum:test:board:{big}:e").Val(); n != 0 {
		t.Fatalf("%d states or index entries left", n)
	}
}

// TestWindowsPackedSliceSaturates: an event that would take a packed
// slice's sum beyond 2^53 − 1 is not counted even when every window sum
// stays in range (another slice of the window is negative, and the short
// window no longer holds the large slice).
func TestWindowsPackedSliceSaturates(t *testing.T) {
	ctx := context.Background()
	st, bs, _ := bigWindowsStore(t)
	t0 := time.Date(2027, 5, 3, 10, 0, 0, 0, time.UTC)
	off := int64(0)
	apply := func(at time.Duration, v int64) board.Result {
		t.Helper()
		b := st.NewBatch()
		b.Cover("t", 0, off, off)
		ev := codec.Event{Type: codec.TypeGift, RoomID: "f", UserID: "u", Value: v, TS: t0.Add(at).UnixMilli()}
		if err := b.Add("t", 0, off, t0.Add(at), []codec.Event{ev}); err != nil {
			t.Fatal(err)
		}
		off++
		res, err := st.Apply(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	apply(-time.Minute, -10)    // 09:59: the 1h window's 09:30 slice
	apply(5*time.Minute, max64) // 10:05: its 10:00 slice, and the 2m window's 10:05
	if _, err := st.Expire(ctx, t0.Add(7*time.Minute+time.Second)); err != nil {
		t.Fatal(err) // the 2m window lets 10:05 go
	}
	// 10:08: +5 would make the 10:00 slice max + 5, the 1h window max − 5
	// and the 2m window 5.
	if res := apply(8*time.Minute, 5); res.Saturated != 1 || res.Applied != 0 {
		t.Fatalf("+5 at 10:08: %+v, want it saturated", res)
	}
	st.SetClock(func() time.Time { return t0.Add(8 * time.Minute) })
	e, err := st.Member(ctx, "big", "f", "", bs[0].Windows()[1])
	if err != nil || e.Total != max64-10 {
		t.Fatalf("1h window: %+v %v, want %d", e, err, int64(max64-10))
	}
}

const max64 = codec.MaxAmount

// bigWindowsStore returns a store on a fresh redis-server with one windows
// board, "big", whose sums may reach ±(2^53 − 1): a 2-minute window on
// 1-minute slices and an hour on 30-minute slices, negative values allowed;
// with the board and the Redis client.
func bigWindowsStore(t *testing.T) (*board.Store, []*boarddef.Board, *redis.Client) {
	t.Helper()
	bs, err := boarddef.Compile([]boarddef.Config{{Name: "big", Events: []string{"gift"}, Member: "room_id", Kind: "windows",
		Windows:       []boarddef.Window{{Length: 2 * time.Minute, Slice: time.Minute}, {Length: time.Hour, Slice: 30 * time.Minute}},
		AllowNegative: true, Floor: "none", MaxTotal: codec.MaxAmount, Grace: dur(time.Second)}})
	if err != nil {
		t.Fatal(err)
	}
	rdb := testenv.StartRedis(t).Client()
	return board.NewStore(rdb, "test", bs), bs, rdb
}
