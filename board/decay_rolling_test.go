package board_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/boardmodel"
	"github.com/rostrumhq/rostrum/internal/testenv"
)

// rollingDecayBoards: a 2-hour window of 5-minute slices with a 1-hour
// half-life, refunds and tenths; a day of hourly slices with a 6-hour one.
func rollingDecayBoards(t testing.TB) []*board.Board {
	t.Helper()
	bs, err := board.Compile([]board.Config{
		{Name: "hot-2h", Events: []string{"gift", "score"}, Member: "room_id", Kind: "rolling", Slice: 5 * time.Minute, Slices: 24,
			Decay: &board.Decay{HalfLife: "1h"}, AllowNegative: true, Scale: 10, Grace: dur(5 * time.Minute)},
		{Name: "hot-day", Events: []string{"score"}, Member: "user_id", Kind: "rolling", Slice: time.Hour, Slices: 24,
			Decay: &board.Decay{HalfLife: "6h"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// TestRollingDecayAgainstModel feeds two rolling decay boards for about
// thirteen simulated hours: the 1-hour board's base moves about thirteen
// times, in Apply calls that add events and in expiry ticks, and expiry
// ticks subtract slices that were rebased after they counted events. Events come from records produced
// with some lag, with retried ids, refunds, decimals and removals. After
// every step Redis holds exactly the model's base, slice sums and window
// sums, and reads at the clock (decayed values, rounded to tenths) equal
// the model's; the events Redis finds late are the model's. At the end,
// when every slice has left, nothing is left behind: a window sum that were
// not the sum of its slices would leave a residue.
func TestRollingDecayAgainstModel(t *testing.T) {
	bs := rollingDecayBoards(t)
	rdb := testenv.StartRedis(t).Client()
	st := board.NewStore(rdb, "test", bs)
	now := time.Date(2027, 3, 1, 9, 17, 0, 0, time.UTC)
	st.SetClock(func() time.Time { return now })
	m := boardmodel.New(bs)
	rng := rand.New(rand.NewPCG(17, 5))
	ctx := context.Background()
	var offset int64
	applyRebases, acrossRebase, lateRedis := 0, 0, 0
	var tickBase int64 // the 1-hour board's base after the last tick
	for step := range 400 {
		now = now.Add(time.Duration(rng.Int64N(int64(4 * time.Minute))))
		if rng.IntN(8) == 0 { // an expiry tick: rebase, then slices leave
			r, err := st.Expire(ctx, now)
			if err != nil {
				t.Fatal(err)
			}
			m.Expire(now)
			// Slices that left the window after the base moved (in
			// this tick or in an apply since the last) were rebased
			// after they counted events.
			if k, _ := rollingBaseOf(ctx, t, rdb, bs[0]); k != tickBase && r.Subtracted > 0 {
				acrossRebase++
				tickBase = k
			}
			for bi, bd := range bs {
				checkRollingDecay(ctx, t, st, rdb, m, bi, bd, now, step)
			}
		}
		b := st.NewBatch()
		rt := now.Add(-time.Duration(rng.Int64N(int64(30 * time.Minute)))) // a lagging consumer
		type rec struct {
			off int64
			evs []codec.Event
		}
		var recs []rec
		for range 1 + rng.IntN(4) {
			var evs []codec.Event
			for range 1 + rng.IntN(3) {
				ev := codec.Event{RoomID: fmt.Sprintf("r%d", rng.IntN(6)), UserID: fmt.Sprintf("u%d", rng.IntN(6)),
					TS: rt.Add(time.Duration(rng.Int64N(int64(150*time.Minute))) - 140*time.Minute).UnixMilli()}
				switch rng.IntN(16) {
				case 0:
					ev.Type, ev.Board = codec.TypeRemove, []string{"hot-2h", "hot-day"}[rng.IntN(2)]
				case 1:
					ev.Type, ev.Value, ev.ID = codec.TypeScore, 7, "order-"+strconv.Itoa(rng.IntN(5)) // retried ids
				default:
					ev.Type = []codec.Type{codec.TypeGift, codec.TypeScore}[rng.IntN(2)]
					ev.Value, ev.Decimals = 1+rng.Int64N(5000), 1
					if rng.IntN(2) == 0 {
						ev.Value, ev.Decimals = 1+rng.Int64N(500), 0
					}
					if rng.IntN(5) == 0 {
						ev.Value = -ev.Value // a refund: hot-2h allows it, hot-day refuses it
					}
				}
				evs = append(evs, ev)
			}
			_ = b.Add("t", 0, offset, rt, evs)
			recs = append(recs, rec{offset, evs})
			offset++
		}
		b.Cover("t", 0, recs[0].off, offset-1)
		before, _ := rollingBaseOf(ctx, t, rdb, bs[0])
		res, err := st.Apply(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		m.Rebase(now) // Apply moves the base first, then adds
		wantLate := map[string]int{}
		for _, r := range recs {
			for _, l := range m.Record("t", 0, r.off, rt, r.evs) {
				if l.InRedis {
					wantLate[l.Board]++
				}
			}
		}
		gotLate := map[string]int{}
		for _, l := range res.Late {
			gotLate[l.Board]++
		}
		if !maps.Equal(gotLate, wantLate) {
			t.Fatalf("step %d: late in Redis %v, model %v", step, gotLate, wantLate)
		}
		lateRedis += gotLate["hot-2h"]
		if after, _ := rollingBaseOf(ctx, t, rdb, bs[0]); after != before && b.Len() > 0 {
			applyRebases++
		}
		for bi, bd := range bs {
			checkRollingDecay(ctx, t, st, rdb, m, bi, bd, now, step)
		}
	}
	if applyRebases < 3 || acrossRebase < 3 || lateRedis == 0 {
		t.Fatalf("the 1-hour board rebased in %d applies with events, %d ticks subtracted slices after a rebase, %d events late in Redis: want some of each",
			applyRebases, acrossRebase, lateRedis)
	}
	t.Logf("%d rebases in applies with events, %d ticks that subtracted slices after a rebase, %d events late in Redis", applyRebases, acrossRebase, lateRedis)

	// A day later every slice has left both windows: nothing remains.
	now = now.Add(26 * time.Hour)
	if _, err := st.Expire(ctx, now); err != nil {
		t.Fatal(err)
	}
	m.Expire(now)
	for bi, bd := range bs {
		checkRollingDecay(ctx, t, st, rdb, m, bi, bd, now, -1)
		P := "rostrum:test:board:{" + bd.Name() + "}:"
		if n := rdb.HLen(ctx, P+"m").Val() + rdb.ZCard(ctx, P+"z:0").Val() + rdb.ZCard(ctx, P+"s").Val(); n != 0 {
			t.Fatalf("%s: %d member states, ranked members or slices left after every slice left", bd.Name(), n)
		}
	}
}

// rollingBaseOf reads a rolling decay board's base from Redis.
func rollingBaseOf(ctx context.Context, t *testing.T, rdb redis.UniversalClient, b *board.Board) (int64, bool) {
	t.Helper()
	v, err := rdb.HGet(ctx, "rostrum:test:board:{"+b.Name()+"}:b", "k").Result()
	if err == redis.Nil {
		return 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	k, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return k, true
}

// checkRollingDecay compares rolling decay board bi with the model: base,
// slice sums and window sums exactly, and the ranking read at now.
func checkRollingDecay(ctx context.Context, t *testing.T, st *board.Store, rdb redis.UniversalClient, m *boardmodel.Model, bi int, b *board.Board, now time.Time, step int) {
	t.Helper()
	P := "rostrum:test:board:{" + b.Name() + "}:"
	k, ok := rollingBaseOf(ctx, t, rdb, b)
	if mk, mok := m.DecayBase(bi); k != mk || ok != mok {
		t.Fatalf("step %d: %s base: redis %d %v, model %d %v", step, b.Name(), k, ok, mk, mok)
	}
	gotS := map[int64]map[string]int64{}
	for _, sl := range rdb.ZRange(ctx, P+"s", 0, -1).Val() {
		cells := map[string]int64{}
		for member, v := range rdb.HGetAll(ctx, P+"s:"+sl).Val() {
			cells[member], _ = strconv.ParseInt(v, 10, 64)
		}
		if len(cells) > 0 {
			s, _ := strconv.ParseInt(sl, 10, 64)
			gotS[s] = cells
		}
	}
	if want := m.SliceSums(bi); !maps.EqualFunc(gotS, want, func(x, y map[string]int64) bool { return maps.Equal(x, y) }) {
		t.Fatalf("step %d: %s slice sums\n redis %v\n model %v", step, b.Name(), gotS, want)
	}
	gotW := map[string]int64{}
	for member, v := range rdb.HGetAll(ctx, P+"m").Val() {
		f := strings.Fields(v)
		gotW[member], _ = strconv.ParseInt(f[1], 10, 64)
	}
	if want := m.WindowSums(bi); !maps.Equal(gotW, want) {
		t.Fatalf("step %d: %s window sums\n redis %v\n model %v", step, b.Name(), gotW, want)
	}
	page, err := st.Top(ctx, b.Name(), "", "", 0, board.MaxPage)
	if err != nil {
		t.Fatal(err)
	}
	want := m.RollingDecayRanking(bi, now)
	got := make([]boardmodel.Entry, len(page.Members))
	for i, e := range page.Members {
		got[i] = boardmodel.Entry(e)
	}
	if !slices.Equal(got, want) || page.TotalMembers != int64(len(want)) {
		t.Fatalf("step %d: %s ranking at %s\n redis %v\n model %v", step, b.Name(), now.Format(time.RFC3339), got, want)
	}
}
