package board_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// BenchmarkRollingDecayRebase measures the batch that moves the base of a
// full rolling decay board: 96 slices of 15 minutes (a day) with a 6-hour
// half-life, the same 1000 members in every slice, so the rebase rewrites
// 96,000 slice sums and 1000 window sums in the apply script, before it
// adds the batch's one event. It reports the script's time as Redis
// measured it (SLOWLOG).
func BenchmarkRollingDecayRebase(b *testing.B) {
	ctx := context.Background()
	rdb := testenv.StartRedis(b).Client()
	bs, err := boarddef.Compile([]boarddef.Config{{Name: "trend", Events: []string{"gift"}, Member: "room_id", Kind: "rolling",
		Slice: 15 * time.Minute, Slices: 96, Decay: &boarddef.Decay{HalfLife: "6h"}}})
	if err != nil {
		b.Fatal(err)
	}
	st := board.NewStore(rdb, "bench", bs)
	var clock time.Time
	st.SetClock(func() time.Time { return clock })
	t0 := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)
	const members, slices = 1000, 96
	var off int64
	apply := func(at time.Time, n int) {
		batch := st.NewBatch()
		for i := range n {
			ev := []codec.Event{{RoomID: "r" + strconv.Itoa(i), UserID: "u", Type: codec.TypeGift, Value: int64(1 + i%500), TS: at.UnixMilli()}}
			if err := batch.Add("t", 0, off, at, ev); err != nil {
				b.Fatal(err)
			}
			off++
		}
		if _, err := st.Apply(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	var longest time.Duration
	for range b.N {
		b.StopTimer()
		rdb.FlushAll(ctx)
		for s := range slices {
			clock = t0.Add(time.Duration(s)*15*time.Minute + time.Second)
			apply(clock, members)
		}
		clock = clock.Add(6 * time.Hour) // the base moves one half-life
		rdb.ConfigSet(ctx, "slowlog-log-slower-than", "0")
		rdb.SlowLogReset(ctx)
		b.StartTimer()
		apply(clock, 1)
		b.StopTimer()
		logs, err := rdb.SlowLogGet(ctx, -1).Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range logs {
			longest = max(longest, l.Duration)
		}
		if n := rdb.HGet(ctx, "rostrum:bench:board:{trend}:b", "rebases").Val(); n == "" {
			b.Fatal("no rebase")
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(longest.Microseconds())/1000, "script-ms")
}
