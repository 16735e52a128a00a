package board_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// TestScoreHoldsState pins the compact periodic layout: a first-reached
// board at 1 ms keeps a member's state in its score alone, and its member
// hash holds only the members the score cannot give back (a total beyond
// max-total, a sum below the floor). A member that leaves such a state
// leaves the hash; one found there whose score could hold its state is
// read from the hash and moves to the score at its next change.
// Rankings, member reads and the settled snapshot equal the model's.
func TestScoreHoldsState(t *testing.T) {
	rdb := testenv.StartRedis(t).Client()
	ctx := context.Background()
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "hourly", Events: []string{"gift"}, Member: "user_id", Kind: "periodic", Period: "hour",
			Tie: "first-reached", MaxTotal: 100, AllowNegative: true, SettleTop: 10},
		{Name: "hourly-none", Events: []string{"gift"}, Member: "user_id", Kind: "periodic", Period: "hour", AllowNegative: true},
		// No floor: a negative sum is exact in the score too.
		{Name: "hourly-net", Events: []string{"gift"}, Member: "user_id", Kind: "periodic", Period: "hour",
			Tie: "first-reached", AllowNegative: true, Floor: "none", SettleTop: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bs[0].ScoreHoldsState() || bs[1].ScoreHoldsState() || !bs[2].ScoreHoldsState() {
		t.Fatalf("ScoreHoldsState: first-reached %v, tie none %v", bs[0].ScoreHoldsState(), bs[1].ScoreHoldsState())
	}
	t0 := time.Date(2027, 5, 3, 10, 0, 0, 0, time.UTC)
	now := t0.Add(30 * time.Minute)
	st := board.NewStore(rdb, "test", bs)
	st.SetClock(func() time.Time { return now })
	m := boardmodel.New(bs)
	label := bs[0].Period(t0).Label
	mkey := "rostrum:test:board:{hourly@" + label + "}:m" // board/keys.go
	zkey := "rostrum:test:board:{hourly@" + label + "}:z"

	// u-old's state in the hash, its score (which could hold it) beside it.
	oldAt := t0.Add(time.Minute).UnixMilli()
	oldScore := float64(40)*float64(int64(1)<<bs[0].ReachedBits()) + float64(int64(1)<<bs[0].ReachedBits()-1-(oldAt-t0.UnixMilli()))
	if err := rdb.HSet(ctx, mkey, "u-old", "40 "+strconv.FormatInt(oldAt, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, zkey, redis.Z{Score: oldScore, Member: "u-old"}).Err(); err != nil {
		t.Fatal(err)
	}
	nkey := "rostrum:test:board:{hourly-none@" + label + "}:"
	if err := rdb.HSet(ctx, nkey+"m", "u-old", "40 "+strconv.FormatInt(oldAt, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, nkey+"z", redis.Z{Score: 40, Member: "u-old"}).Err(); err != nil {
		t.Fatal(err)
	}
	xkey := "rostrum:test:board:{hourly-net@" + label + "}:"
	if err := rdb.HSet(ctx, xkey+"m", "u-old", "40 "+strconv.FormatInt(oldAt, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	netR := float64(int64(1) << bs[2].ReachedBits())
	if err := rdb.ZAdd(ctx, xkey+"z", redis.Z{Score: 40*netR + netR - 1 - float64(oldAt-t0.UnixMilli()), Member: "u-old"}).Err(); err != nil {
		t.Fatal(err)
	}
	m.Record("seed", 0, 0, now, []codec.Event{{UserID: "u-old", Type: codec.TypeGift, Value: 40, TS: oldAt}})

	offset := int64(0)
	apply := func(evs ...codec.Event) {
		t.Helper()
		b := st.NewBatch()
		for i := range evs {
			evs[i].Type, evs[i].RoomID = codec.TypeGift, "r"
			if err := b.Add("in", 0, offset, now, evs[i:i+1]); err != nil {
				t.Fatal(err)
			}
			m.Record("in", 0, offset, now, evs[i:i+1])
			offset++
		}
		if _, err := st.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	hashed := func() []string {
		t.Helper()
		ks, err := rdb.HKeys(ctx, mkey).Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(ks)
		return ks
	}
	check := func(step string) {
		t.Helper()
		for bi, bd := range bs {
			want := m.Ranking(bi, label, 0)
			got, _ := topEntries(t, st, bd.Name(), label, "")
			if !slices.Equal(got, want) {
				t.Fatalf("%s: %s:\n redis %v\n model %v", step, bd.Name(), got, want)
			}
			for _, w := range want {
				if e, err := st.Member(ctx, bd.Name(), w.Member, label, ""); err != nil || e != board.Entry(w) {
					t.Fatalf("%s: %s member %s: %v %v, want %v", step, bd.Name(), w.Member, e, err, w)
				}
			}
		}
	}
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }

	apply(codec.Event{UserID: "u-1", Value: 30, TS: ms(2 * time.Minute)},
		codec.Event{UserID: "u-2", Value: 80, TS: ms(3 * time.Minute)},
		codec.Event{UserID: "u-2", Value: 70, TS: ms(3 * time.Minute)}, // 150: beyond max-total
		codec.Event{UserID: "u-3", Value: -5, TS: ms(4 * time.Minute)}, // below the floor 0
		codec.Event{UserID: "u-1", Value: 12, TS: ms(5 * time.Minute)})
	check("first batch")
	if got := hashed(); !slices.Equal(got, []string{"u-2", "u-3", "u-old"}) {
		t.Fatalf("member hash after the first batch holds %v, want the saturated, the floored and u-old", got)
	}
	apply(codec.Event{UserID: "u-2", Value: -60, TS: ms(6 * time.Minute)}, // back to 90: exact
		codec.Event{UserID: "u-3", Value: 8, TS: ms(7 * time.Minute)}, // 3: exact
		codec.Event{UserID: "u-old", Value: 5, TS: ms(8 * time.Minute)})
	check("second batch")
	if got := hashed(); len(got) != 0 {
		t.Fatalf("member hash holds %v, want none: every score holds its state", got)
	}
	// Without a floor, u-3's -5 then 3 never needed the hash.
	if n := rdb.HLen(ctx, xkey+"m").Val(); n != 0 {
		t.Fatalf("board without a floor: %d states in the hash, want none", n)
	}
	// The tie: none board keeps every state in its hash.
	if n := rdb.HLen(ctx, nkey+"m").Val(); n != 4 {
		t.Fatalf("tie none board: %d states in the hash, want 4", n)
	}

	// The settled snapshot decodes the states from the scores.
	now = t0.Add(time.Hour + 2*time.Minute)
	if _, err := st.Settle(ctx, now); err != nil {
		t.Fatal(err)
	}
	m.Settle(now)
	got, err := st.Settled(ctx, "hourly", label, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := m.SettledOf(0)
	if len(want) != 1 || len(got.Top) != len(want[0].Top) {
		t.Fatalf("settled %v, model %v", got, want)
	}
	for i, e := range got.Top {
		if boardmodel.Entry(e) != want[0].Top[i] {
			t.Fatalf("settled entry %d: %v, model %v", i, e, want[0].Top[i])
		}
	}
}
