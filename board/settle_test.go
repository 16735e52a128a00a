package board_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

func settleBoards(t testing.TB) []*boarddef.Board {
	t.Helper()
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "hour-berlin", Events: []string{"gift"}, Member: "room_id", Kind: "periodic", Period: "hour",
			TZ: "Europe/Berlin", Tie: "first-reached", Grace: dur(30 * time.Second), SettleTop: 3},
		{Name: "day-ny", Events: []string{"gift", "score"}, Member: "user_id", Kind: "periodic", Period: "day",
			TZ: "America/New_York", Tie: "first-reached"},
		{Name: "hour-off", Events: []string{"gift"}, Member: "room_id", Kind: "periodic", Period: "hour", Settle: "false"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// settledJSON is the record published on {env}.boards.settled.
type settledJSON struct {
	Board    string `json:"board"`
	Period   string `json:"period"`
	ClosedAt int64  `json:"closed_at"`
	Members  int64  `json:"members"`
	Top      []struct {
		Member    string `json:"member"`
		Rank      int64  `json:"rank"`
		Total     int64  `json:"total"`
		ReachedAt int64  `json:"reached_at"`
	} `json:"top"`
}

func (r settledJSON) settled() boardmodel.Settled {
	s := boardmodel.Settled{Board: r.Board, Period: r.Period, ClosedAt: r.ClosedAt, Members: r.Members, Top: []boardmodel.Entry{}}
	for _, e := range r.Top {
		s.Top = append(s.Top, boardmodel.Entry{Member: e.Member, Rank: e.Rank, Total: e.Total, ReachedAt: e.ReachedAt})
	}
	return s
}

// TestSettleAgainstModel runs two days of random events, with consumer lag
// and late events, across the end of DST in Berlin and New York, settling
// every ten minutes in Redis and in the model: the same periods settle,
// each once, with the same snapshots and records, and the events of a
// settled period are late in both.
func TestSettleAgainstModel(t *testing.T) {
	rdb := testenv.StartRedis(t).Client()
	ctx := context.Background()
	bs := settleBoards(t)
	st := board.NewStore(rdb, "test", bs)
	st.SetSettlePage(2) // settle in many steps
	m := boardmodel.New(bs)
	rng := rand.New(rand.NewPCG(17, 1))
	now := time.Date(2027, 10, 30, 20, 0, 0, 0, time.UTC) // Berlin leaves DST on 2027-10-31
	st.SetClock(func() time.Time { return now })
	var off int64
	var want []boardmodel.Settled
	lateRedis, lateModel := map[string]bool{}, map[string]bool{}
	for step := 0; step < 6*48; step++ {
		batch := st.NewBatch()
		for range 1 + rng.IntN(6) {
			rt := now
			if rng.IntN(5) == 0 {
				rt = now.Add(-time.Duration(rng.Int64N(int64(20 * time.Minute)))) // consumer lag
			}
			ts := rt.Add(-time.Duration(rng.Int64N(int64(40 * time.Minute))))
			ev := codec.Event{RoomID: fmt.Sprintf("r%d", rng.IntN(5)), UserID: fmt.Sprintf("u%d", rng.IntN(5)),
				Type: codec.TypeGift, Value: 1 + rng.Int64N(4), TS: ts.UnixMilli()}
			evs := []codec.Event{ev}
			if err := batch.Add("t", 0, off, rt, evs); err != nil {
				lateRedis[fmt.Sprint(off)] = true
			}
			if len(m.Record("t", 0, off, rt, evs)) > 0 {
				lateModel[fmt.Sprint(off)] = true
			}
			off++
		}
		res, err := st.Apply(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range res.Late {
			lateRedis[fmt.Sprint(l.Offset)] = true
		}
		if _, err := st.Settle(ctx, now); err != nil {
			t.Fatal(err)
		}
		want = append(want, m.Settle(now)...)
		now = now.Add(10 * time.Minute)
	}
	if len(lateModel) == 0 || !mapsEqual(lateRedis, lateModel) {
		t.Fatalf("late records: redis %v, model %v", lateRedis, lateModel)
	}
	// The outbox holds each settled period once, as the model settled it.
	recs, err := st.ClaimSettled(ctx, "a", now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var got []boardmodel.Settled
	for len(recs) > 0 {
		for _, r := range recs {
			var v settledJSON
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Fatalf("%s: %v", r.Value, err)
			}
			if r.Key() != v.Board+"/"+v.Period {
				t.Fatalf("key %s for %s/%s", r.Key(), v.Board, v.Period)
			}
			got = append(got, v.settled())
			if err := st.AckSettled(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if recs, err = st.ClaimSettled(ctx, "a", now, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	order := func(a, b boardmodel.Settled) int {
		if a.Board != b.Board {
			return map[bool]int{true: -1, false: 1}[a.Board < b.Board]
		}
		return map[bool]int{true: -1, false: 1}[a.Period < b.Period]
	}
	slices.SortFunc(got, order)
	slices.SortFunc(want, order)
	if len(want) < 40 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("records:\n got %v\nwant %v", got, want)
	}
	// The snapshots read back as settled, the newest first by default.
	for _, w := range want {
		p, err := st.Settled(ctx, w.Board, w.Period, 0, board.MaxPage)
		if err != nil {
			t.Fatal(err)
		}
		g := boardmodel.Settled{Board: p.Board, Period: p.Period, ClosedAt: p.ClosedAt, Members: p.Members, Top: []boardmodel.Entry{}}
		for _, e := range p.Top {
			g.Top = append(g.Top, boardmodel.Entry(e))
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Fatalf("snapshot %s/%s: got %v, want %v", w.Board, w.Period, g, w)
		}
	}
	if _, err := st.Settled(ctx, "hour-off", "", 0, 10); err == nil {
		t.Fatal("a board with settle: false has settled periods")
	}
	periods, err := st.SettledPeriods(ctx, "day-ny")
	ny := m.SettledOf(1)
	if err != nil || len(periods) != len(ny) || periods[0] != ny[len(ny)-1].Period {
		t.Fatalf("settled periods of day-ny: %v %v", periods, err)
	}
}

// TestSettleConcurrent settles one big period from several stores at once,
// one member per call: it settles once, and its snapshot is the ranking;
func TestSettleConcurrent(t *testing.T) {
	rdb := testenv.StartRedis(t).Client()
	ctx := context.Background()
	bs, err := boarddef.Compile([]boarddef.Config{{Name: "h", Events: []string{"gift"}, Member: "room_id", Kind: "periodic",
		Period: "hour", SettleTop: 150}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2027, 5, 1, 10, 0, 0, 0, time.UTC)
	st := board.NewStore(rdb, "test", bs)
	m := boardmodel.New(bs)
	batch := st.NewBatch()
	for i := range 200 {
		evs := []codec.Event{{RoomID: fmt.Sprintf("r%03d", i), Type: codec.TypeGift, Value: int64(1 + i%37), TS: t0.Add(time.Duration(i) * time.Second).UnixMilli()}}
		if err := batch.Add("t", 0, int64(i), t0, evs); err != nil {
			t.Fatal(err)
		}
		m.Record("t", 0, int64(i), t0, evs)
	}
	if _, err := st.Apply(ctx, batch); err != nil {
		t.Fatal(err)
	}
	// The first settle of a board starts with the last closed period.
	at := t0.Add(time.Hour + 2*time.Minute)
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 4 {
		s := board.NewStore(rdb, "test", bs)
		s.SetSettlePage(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Settle(ctx, at)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += res.Settled
			mu.Unlock()
		}()
	}
	wg.Wait()
	want := m.Settle(at)
	if total != 1 || len(want) != 1 {
		t.Fatalf("settled %d times, model %d", total, len(want))
	}
	p, err := st.Settled(ctx, "h", "", 0, board.MaxPage)
	if err != nil {
		t.Fatal(err)
	}
	if p.Period != want[0].Period || p.Members != 200 || len(p.Top) != 150 {
		t.Fatalf("snapshot %s: %d members, top %d", p.Period, p.Members, len(p.Top))
	}
	for i, e := range p.Top {
		if boardmodel.Entry(e) != want[0].Top[i] {
			t.Fatalf("rank %d: %v, want %v", i+1, e, want[0].Top[i])
		}
	}
	// Two claimants: the record goes to one until its lease runs out.
	a, _ := st.ClaimSettled(ctx, "a", at, time.Minute)
	b, _ := st.ClaimSettled(ctx, "b", at, time.Minute)
	c, _ := st.ClaimSettled(ctx, "c", at.Add(2*time.Minute), time.Minute)
	if len(a) != 1 || len(b) != 0 || len(c) != 1 {
		t.Fatalf("claims: %d %d %d", len(a), len(b), len(c))
	}
	// A late event for the settled period changes nothing.
	batch = st.NewBatch()
	evs := []codec.Event{{RoomID: "r999", Type: codec.TypeGift, Value: 1000, TS: t0.UnixMilli()}}
	if err := batch.Add("t", 0, 500, t0.Add(30*time.Minute), evs); err != nil {
		t.Fatal(err)
	}
	res, err := st.Apply(ctx, batch)
	if err != nil || len(res.Late) != 1 {
		t.Fatalf("late in redis: %v %v", res.Late, err)
	}
	if l := m.Record("t", 0, 500, t0.Add(30*time.Minute), evs); len(l) != 1 || !l[0].InRedis {
		t.Fatalf("model: %v", l)
	}
}
