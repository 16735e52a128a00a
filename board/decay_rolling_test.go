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
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// rollingDecayBoards: a 2-hour window of 5-minute slices with a 1-hour
// half-life, refunds and tenths; a day of hourly slices with a 6-hour one.
func rollingDecayBoards(t testing.TB) []*boarddef.Board {
	t.Helper()
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "hot-2h", Events: []string{"gift", "score"}, Member: "room_id", Kind: "rolling", Slice: 5 * time.Minute, Slices: 24,
			Decay: &boarddef.Decay{HalfLife: "1h"}, AllowNegative: true, Scale: 10, Grace: dur(5 * time.Minute)},
		{Name: "hot-day", Events: []string{"score"}, Member: "user_id", Kind: "rolling", Slice: time.Hour, Slices: 24,
			Decay: &boarddef.Decay{HalfLife: "6h"}},
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
func rollingBaseOf(ctx context.Context, t *testing.T, rdb redis.UniversalClient, b *boarddef.Board) (int64, bool) {
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
func checkRollingDecay(ctx context.Context, t *testing.T, st *board.Store, rdb redis.UniversalClient, m *boardmodel.Model, bi int, b *boarddef.Board, now time.Time, step int) {
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

// TestRollingDecayByHand pins Redis to sums worked out by hand (the same as
// boardmodel.TestRollingDecayByHand): two gifts of 999 one half-life back,
// in two slices with odd weights 1051609 and 1487199; a rebase halves each
// slice, floored, and the window sum is their sum (one below half the
// sum); the older slice's expiry after a second rebase leaves exactly the
// other's. An event below the base is late with Base set.
func TestRollingDecayByHand(t *testing.T) {
	bs, err := boarddef.Compile([]boarddef.Config{{Name: "r", Events: []string{"gift"}, Member: "room_id", Kind: "rolling",
		Slice: 30 * time.Minute, Slices: 6, Decay: &boarddef.Decay{HalfLife: "1h"}, Grace: dur(0)}})
	if err != nil {
		t.Fatal(err)
	}
	rdb := testenv.StartRedis(t).Client()
	st := board.NewStore(rdb, "test", bs)
	t0 := time.Date(2027, 1, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	st.SetClock(func() time.Time { return now })
	ctx := context.Background()
	gift := func(v int64, at time.Duration) codec.Event {
		return codec.Event{RoomID: "a", UserID: "u", Type: codec.TypeGift, Value: v, TS: t0.Add(at).UnixMilli()}
	}
	apply := func(off int64, rt time.Time, evs ...codec.Event) board.Result {
		t.Helper()
		b := st.NewBatch()
		if err := b.Add("t", 0, off, rt, evs); err != nil {
			t.Fatal(err)
		}
		res, err := st.Apply(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	P := "rostrum:test:board:{r}:"
	sum := func() string { return strings.Fields(rdb.HGet(ctx, P+"m", "a").Val())[1] }
	apply(0, t0, gift(999, -time.Hour+15*time.Second), gift(999, -30*time.Minute+15*time.Second))
	s0 := t0.UnixMilli() / (30 * time.Minute).Milliseconds()
	cell := func(s int64) string { return rdb.HGet(ctx, P+"s:"+strconv.FormatInt(s, 10), "a").Val() }
	if c1, c2 := cell(s0-2), cell(s0-1); c1 != "1050557391" || c2 != "1485711801" {
		t.Fatalf("slices %s %s, want 999·1051609 = 1050557391 and 999·1487199 = 1485711801", c1, c2)
	}
	now = t0.Add(time.Hour)
	if _, err := st.Expire(ctx, now); err != nil {
		t.Fatal(err)
	}
	if c1, c2, s := cell(s0-2), cell(s0-1), sum(); c1 != "525278695" || c2 != "742855900" || s != "1268134595" {
		t.Fatalf("after a rebase: slices %s %s, window sum %s; want 525278695 742855900 and their sum 1268134595", c1, c2, s)
	}
	e, err := st.Member(ctx, "r", "a", "", "")
	if err != nil || e.Total != 605 {
		t.Fatalf("a at 13:00: %+v %v, want 605 (1268134595/2^21 = 604.69…)", e, err)
	}
	now = t0.Add(2 * time.Hour)
	if _, err := st.Expire(ctx, now); err != nil {
		t.Fatal(err)
	}
	if s := sum(); s != "371427950" {
		t.Fatalf("after the 11:00 slice left: window sum %s, want 742855900/2 = 371427950", s)
	}
	res := apply(1, t0, gift(1, -15*time.Minute)) // 11:45 from a record of 12:00, applied at 14:00
	if len(res.Late) != 1 || !res.Late[0].Base {
		t.Fatalf("an event below the base: %+v", res.Late)
	}
}

// TestRollingDecaySaturates: entries that would take a window sum past
// 2^53 − 1 are not added (counted as saturated), so the sums stay exact:
// the window sum is the slice's, and it leaves with the slice.
func TestRollingDecaySaturates(t *testing.T) {
	bs, err := boarddef.Compile([]boarddef.Config{{Name: "r", Events: []string{"gift"}, Member: "room_id", Kind: "rolling",
		Slice: 30 * time.Minute, Slices: 2, Decay: &boarddef.Decay{HalfLife: "1h"}, Grace: dur(0)}})
	if err != nil {
		t.Fatal(err)
	}
	rdb := testenv.StartRedis(t).Client()
	st := board.NewStore(rdb, "test", bs)
	t0 := time.Date(2027, 1, 1, 12, 0, 0, 0, time.UTC)
	now := t0.Add(59 * time.Minute)
	st.SetClock(func() time.Time { return now })
	ctx := context.Background()
	b := st.NewBatch()
	var evs []codec.Event
	for i := range 8 { // each 2^29 − 1 at 12:59 (weight ≈ 2^21 · 2^1): 2^51 each
		evs = append(evs, codec.Event{RoomID: "a", UserID: "u", Type: codec.TypeGift, Value: 1<<29 - 1, ID: strconv.Itoa(i), TS: now.UnixMilli()})
	}
	if err := b.Add("t", 0, 0, now, evs); err != nil {
		t.Fatal(err)
	}
	res, err := st.Apply(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	P := "rostrum:test:board:{r}:"
	sl := strconv.FormatInt(now.UnixMilli()/(30*time.Minute).Milliseconds(), 10)
	cell, _ := strconv.ParseInt(rdb.HGet(ctx, P+"s:"+sl, "a").Val(), 10, 64)
	sum, _ := strconv.ParseInt(strings.Fields(rdb.HGet(ctx, P+"m", "a").Val())[1], 10, 64)
	if res.Saturated == 0 || res.Applied+res.Saturated != 8 || cell != sum || sum > 1<<53-1 || sum < 1<<52 {
		t.Fatalf("applied %d, saturated %d, slice %d, window sum %d: want some saturated and the sums equal, below 2^53", res.Applied, res.Saturated, cell, sum)
	}
	now = now.Add(2 * time.Hour)
	if _, err := st.Expire(ctx, now); err != nil {
		t.Fatal(err)
	}
	if n := rdb.HLen(ctx, P+"m").Val() + rdb.ZCard(ctx, P+"z:0").Val(); n != 0 {
		t.Fatalf("%d states or ranked members left after the slice left", n)
	}
}
