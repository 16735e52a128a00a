package board_test

import (
	"context"
	"fmt"
	"maps"
	"math"
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

// decayBoards: an all-time first-reached board, a decay board of a 1-hour
// half-life with refunds and tenths, and a decay board of a 7-day one.
func decayBoards(t testing.TB) []*boarddef.Board {
	t.Helper()
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "all-time", Events: []string{"gift"}, Member: "user_id", Kind: "total", Tie: "first-reached"},
		{Name: "hot", Events: []string{"gift", "score"}, Member: "room_id", Kind: "total", Decay: &boarddef.Decay{HalfLife: "1h"},
			AllowNegative: true, Scale: 10, Grace: dur(5 * time.Minute)},
		{Name: "hot-week", Events: []string{"score"}, Member: "user_id", Kind: "total", Decay: &boarddef.Decay{HalfLife: "7d"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// TestTotalAndDecayAgainstModel feeds a total board and two decay boards
// for ten simulated hours (ten half-lives of the 1-hour board, so its base
// moves about ten times, in Apply calls that also add events, and in
// expiry ticks without any): events of the last 90 minutes and a little
// ahead, from records produced with some lag, retried ids, refunds,
// decimals, removals. After every step the stored sums and bases equal the
// model's exactly, and the rankings read at the clock (decayed values,
// rounded to tenths) equal the model's.
func TestTotalAndDecayAgainstModel(t *testing.T) {
	bs := decayBoards(t)
	rdb := testenv.StartRedis(t).Client()
	st := board.NewStore(rdb, "test", bs)
	now := time.Date(2027, 3, 1, 9, 17, 0, 0, time.UTC)
	st.SetClock(func() time.Time { return now })
	m := boardmodel.New(bs)
	rng := rand.New(rand.NewPCG(17, 4))
	ctx := context.Background()
	var offset int64
	rebases, lateBase, lateRecord := 0, 0, 0
	for step := range 400 {
		now = now.Add(time.Duration(rng.Int64N(int64(3 * time.Minute))))
		if rng.IntN(10) == 0 { // an expiry tick: the base moves without events
			if _, err := st.Expire(ctx, now); err != nil {
				t.Fatal(err)
			}
			m.Expire(now)
		}
		b := st.NewBatch()
		rt := now.Add(-time.Duration(rng.Int64N(int64(20 * time.Minute)))) // a lagging consumer: the clock is ahead of the record
		type rec struct {
			off int64
			evs []codec.Event
		}
		var recs []rec
		for range 1 + rng.IntN(4) {
			var evs []codec.Event
			for range 1 + rng.IntN(3) {
				ev := codec.Event{RoomID: fmt.Sprintf("r%d", rng.IntN(6)), UserID: fmt.Sprintf("u%d", rng.IntN(6)),
					TS: rt.Add(time.Duration(rng.Int64N(int64(100*time.Minute))) - 90*time.Minute).UnixMilli()}
				switch rng.IntN(14) {
				case 0:
					ev.Type, ev.Board = codec.TypeRemove, []string{"all-time", "hot", "hot-week"}[rng.IntN(3)]
				case 1:
					ev.Type, ev.Value, ev.ID = codec.TypeGift, 7, "order-"+strconv.Itoa(rng.IntN(5)) // retried ids
				default:
					ev.Type = []codec.Type{codec.TypeGift, codec.TypeScore}[rng.IntN(2)]
					ev.Value, ev.Decimals = 1+rng.Int64N(5000), 1
					if rng.IntN(2) == 0 {
						ev.Value, ev.Decimals = 1+rng.Int64N(500), 0
					}
					if ev.Type == codec.TypeScore && rng.IntN(5) == 0 {
						ev.Value = -ev.Value // a penalty: hot allows it, hot-week refuses it
					}
				}
				evs = append(evs, ev)
			}
			_ = b.Add("t", 0, offset, rt, evs)
			recs = append(recs, rec{offset, evs})
			offset++
		}
		b.Cover("t", 0, recs[0].off, offset-1)
		before, _ := baseOf(ctx, t, rdb, bs[1])
		if _, err := st.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
		m.Rebase(now) // Apply moves the base first, then adds
		for _, r := range recs {
			for _, l := range m.Record("t", 0, r.off, rt, r.evs) {
				if l.Board == "hot" && l.Class == "" {
					if l.InRedis {
						lateBase++
					} else {
						lateRecord++
					}
				}
			}
		}
		if after, _ := baseOf(ctx, t, rdb, bs[1]); after != before {
			rebases++
		}
		for bi, bd := range bs {
			checkTotalBoard(ctx, t, st, rdb, m, bi, bd, now, step)
		}
	}
	// The base moved in applies that added events, and it made events late
	// that their record time had not (a consumer lagging behind the clock).
	if rebases < 5 || lateBase == 0 || lateRecord == 0 {
		t.Fatalf("the 1-hour board rebased in %d applies, %d events late below the base, %d by record time: want some of each", rebases, lateBase, lateRecord)
	}
	t.Logf("1-hour board: %d rebases in applies, %d events late below the base, %d late by record time", rebases, lateBase, lateRecord)
}

// baseOf reads a decay board's base from Redis.
func baseOf(ctx context.Context, t *testing.T, rdb redis.UniversalClient, b *boarddef.Board) (int64, bool) {
	t.Helper()
	v, err := rdb.HGet(ctx, "rostrum:test:board:{"+b.Name()+"}:T:b", "k").Result()
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

// checkTotalBoard compares total board bi with the model: the stored sums
// and base exactly, and the ranking read at now.
func checkTotalBoard(ctx context.Context, t *testing.T, st *board.Store, rdb redis.UniversalClient, m *boardmodel.Model, bi int, b *boarddef.Board, now time.Time, step int) {
	t.Helper()
	raw, err := rdb.HGetAll(ctx, "rostrum:test:board:{"+b.Name()+"}:T:m").Result()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for member, v := range raw {
		f := strings.Fields(v)
		x, _ := strconv.ParseInt(f[0], 10, 64)
		got[member] = x
	}
	if want := m.Sums(bi); !maps.Equal(got, want) {
		t.Fatalf("step %d: %s sums\n redis %v\n model %v", step, b.Name(), got, want)
	}
	if b.HalfLife() > 0 {
		k, ok := baseOf(ctx, t, rdb, b)
		mk, mok := m.Base(bi)
		if k != mk || ok != mok {
			t.Fatalf("step %d: %s base: redis %d %v, model %d %v", step, b.Name(), k, ok, mk, mok)
		}
	}
	page, err := st.Top(ctx, b.Name(), "", "", 0, board.MaxPage)
	if err != nil {
		t.Fatal(err)
	}
	want := m.TotalRanking(bi, now)
	gotE := make([]boardmodel.Entry, len(page.Members))
	for i, e := range page.Members {
		gotE[i] = boardmodel.Entry(e)
	}
	if !slices.Equal(gotE, want) || page.TotalMembers != int64(len(want)) {
		t.Fatalf("step %d: %s ranking at %s\n redis %v\n model %v", step, b.Name(), now.Format(time.RFC3339), gotE, want)
	}
}

// TestDecayValues pins what a decay board shows against the ideal decayed
// value Σ v·2^((ts − now)/H), worked out here in floating point: a value
// halves every half-life, reads follow the clock with no event, and a
// rebase (the clock passing two half-lives) changes no value beyond the
// rounding to the board's unit.
func TestDecayValues(t *testing.T) {
	bs := decayBoards(t)
	hot := bs[1]
	rdb := testenv.StartRedis(t).Client()
	st := board.NewStore(rdb, "test", bs)
	start := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	now := start
	st.SetClock(func() time.Time { return now })
	ctx := context.Background()
	b := st.NewBatch()
	evs := []codec.Event{
		{RoomID: "r1", UserID: "u", Type: codec.TypeGift, Value: 1000, TS: start.UnixMilli()},
		{RoomID: "r2", UserID: "u", Type: codec.TypeGift, Value: 6001, Decimals: 1, TS: start.Add(-20 * time.Minute).UnixMilli()},
		{RoomID: "r2", UserID: "u", Type: codec.TypeScore, Value: -100, TS: start.Add(-time.Minute).UnixMilli()},
	}
	// all-time counts whole gifts only: it refuses 600.1, the others count.
	if err := b.Add("t", 0, 0, now, evs); err == nil || !strings.Contains(err.Error(), "board all-time: event[1]: value: 600.1") {
		t.Fatalf("add: %v", err)
	}
	if _, err := st.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	ideal := func(at time.Time) map[string]float64 {
		out := map[string]float64{}
		for _, e := range evs {
			v := float64(e.Value) / math.Pow(10, float64(e.Decimals))
			out[e.RoomID] += v * math.Pow(2, float64(e.TS-at.UnixMilli())/float64(time.Hour.Milliseconds()))
		}
		return out
	}
	for _, d := range []time.Duration{0, 30 * time.Minute, time.Hour, 3*time.Hour + 7*time.Minute, 9 * time.Hour} {
		now = start.Add(d)
		if d >= 3*time.Hour {
			if _, err := st.Expire(ctx, now); err != nil { // the base moves
				t.Fatal(err)
			}
		}
		want := ideal(now)
		for _, room := range []string{"r1", "r2"} {
			e, err := st.Member(ctx, hot.Name(), room, "", "")
			if err != nil {
				t.Fatal(err)
			}
			got := float64(e.Total) / 10
			if math.Abs(got-want[room]) > 0.05+1e-6*math.Abs(want[room]) {
				t.Fatalf("at +%s: %s shows %s, the ideal decayed value is %.4f", d, room, hot.FormatUnits(e.Total), want[room])
			}
		}
	}
	if k, ok := baseOf(ctx, t, rdb, hot); !ok || k < 5 {
		t.Fatalf("base %d %v after nine hours, want it moved", k, ok)
	}
	// 1000 at 09:00 (the start of a half-life: its weight is exactly 2^20)
	// shows 500 at 10:00, 250 at 11:00, and 1000/2^9 = 1.95… at 18:00,
	// rounded to the board's tenths; the base moved in between.
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{time.Hour, "500"}, {2 * time.Hour, "250"}, {9 * time.Hour, "2"}} {
		now = start.Add(c.d)
		e, err := st.Member(ctx, hot.Name(), "r1", "", "")
		if err != nil {
			t.Fatal(err)
		}
		if got := hot.FormatUnits(e.Total); got != c.want {
			t.Fatalf("r1 at +%s shows %s, want %s", c.d, got, c.want)
		}
	}
}
