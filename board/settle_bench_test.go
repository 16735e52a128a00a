package board_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// BenchmarkSettle100k settles one period of a board of 100,000 members,
// with the default settle-top (1000) and the largest (10000). It reports
// the longest single script call as Redis measured it (SLOWLOG), the
// calls per settlement, and the Redis memory the snapshot and its record
// take.
func BenchmarkSettle100k(b *testing.B) {
	for _, top := range []int{boarddef.DefaultSettleTop, boarddef.MaxSettleTop} {
		b.Run(fmt.Sprintf("top=%d", top), func(b *testing.B) { benchSettle(b, top) })
	}
}

func benchSettle(b *testing.B, top int) {
	ctx := context.Background()
	rdb := testenv.StartRedis(b).Client()
	bs, err := boarddef.Compile([]boarddef.Config{{Name: "big", Events: []string{"gift"}, Member: "user_id", Kind: "periodic",
		Period: "hour", Tie: "first-reached", SettleTop: top}})
	if err != nil {
		b.Fatal(err)
	}
	st := board.NewStore(rdb, "bench", bs)
	t0 := time.Now().Truncate(time.Hour).Add(-time.Hour)
	const members = 100000
	for k := 0; k < members; k += 10000 {
		batch := st.NewBatch()
		for i := k; i < k+10000; i++ {
			ev := []codec.Event{{RoomID: "r", UserID: "u" + strconv.Itoa(i), Type: codec.TypeGift, Value: int64(1 + i%5000),
				TS: t0.Add(time.Duration(i) * 10 * time.Millisecond).UnixMilli()}}
			if err := batch.Add("t", 0, int64(i), time.Time{}, ev); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := st.Apply(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	at := t0.Add(time.Hour + 2*time.Minute)
	P := "rostrum:bench:board:{big}:"
	label := bs[0].Period(t0).Label
	rdb.ConfigSet(ctx, "slowlog-log-slower-than", "0")
	rdb.ConfigSet(ctx, "slowlog-max-len", "100000")
	var longest time.Duration
	var calls int
	var mem int64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		rdb.Del(ctx, P+"st", P+"S:"+label, P+"S:"+label+":i", P+"o", P+"SL")
		before := usedMemory(b, rdb)
		rdb.SlowLogReset(ctx)
		b.StartTimer()
		res, err := st.Settle(ctx, at)
		if err != nil || res.Settled != 1 {
			b.Fatalf("settle: %v %v", res, err)
		}
		b.StopTimer()
		calls = res.Calls
		mem = usedMemory(b, rdb) - before
		log, err := rdb.SlowLogGet(ctx, 100000).Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range log {
			if len(l.Args) > 0 && strings.EqualFold(l.Args[0], "evalsha") {
				longest = max(longest, l.Duration)
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(longest.Microseconds()), "longest-call-µs")
	b.ReportMetric(float64(calls), "calls")
	b.ReportMetric(float64(mem), "redis-bytes")
}
