package board_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// memberBoards are the boards of a member read: seed 001's weekly score (in
// tenths, first-reached) and its received/read counts, seed 002's five
// windows (one board of items, ranked by room id, and one of users), a
// rolling board, an all-time board, a decay board and a rolling decay board.
func memberBoards(t testing.TB) []*boarddef.Board {
	t.Helper()
	week := func(name, ev string) boarddef.Config {
		return boarddef.Config{Name: name, Events: []string{ev}, Member: "user_id", Value: "one", Kind: "periodic",
			Period: "week", TZ: "Asia/Shanghai"}
	}
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "weekly-score", Events: []string{"score"}, Member: "user_id", Kind: "periodic", Period: "week",
			TZ: "Asia/Shanghai", Tie: "first-reached", Scale: 10},
		week("weekly-received", "received"),
		week("weekly-read", "read"),
		{Name: "item-trades", Events: []string{"trade"}, Member: "room_id", Kind: "windows", Slice: time.Minute,
			Windows: boarddef.Lengths(3*time.Minute, 10*time.Minute, time.Hour, 6*time.Hour, 24*time.Hour), Grace: dur(10 * time.Second)},
		{Name: "user-trades", Events: []string{"trade"}, Member: "user_id", Kind: "windows", Slice: time.Minute,
			Windows: boarddef.Lengths(3*time.Minute, 10*time.Minute, time.Hour, 6*time.Hour, 24*time.Hour), Grace: dur(10 * time.Second)},
		{Name: "gifts-1h", Events: []string{"gift"}, Member: "user_id", Kind: "rolling", Slice: 10 * time.Minute, Slices: 6,
			Tie: "first-reached"},
		{Name: "all-time", Events: []string{"gift"}, Member: "user_id", Kind: "total", Tie: "first-reached"},
		{Name: "hot-week", Events: []string{"gift", "score"}, Member: "user_id", Kind: "total", Decay: &boarddef.Decay{HalfLife: "7d"}},
		{Name: "trending", Events: []string{"gift"}, Member: "user_id", Kind: "rolling", Slice: 15 * time.Minute, Slices: 12,
			Decay: &boarddef.Decay{HalfLife: "1h"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// pipelineCounter counts the pipelines a client sends and the commands in
// them.
type pipelineCounter struct {
	mu         sync.Mutex
	pipes, cmd int
}

func (c *pipelineCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *pipelineCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (c *pipelineCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		c.pipes++
		c.cmd += len(cmds)
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (c *pipelineCounter) reset() (pipes, cmds int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pipes, cmds = c.pipes, c.cmd
	c.pipes, c.cmd = 0, 0
	return pipes, cmds
}

// feedMembers applies steps random batches to st and m (users u0…u11,
// items i0…i3) starting at start, expiring and checking on the way, and
// returns the clock at the end. check runs every few steps and at the end.
func feedMembers(t *testing.T, st *board.Store, m *boardmodel.Model, start time.Time, steps int, seed uint64, check func(now time.Time)) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 18))
	now := start
	st.SetClock(func() time.Time { return now })
	var offset int64
	for step := range steps {
		now = now.Add(time.Duration(rng.Int64N(int64(4 * time.Minute))))
		if rng.IntN(4) == 0 {
			if _, err := st.Expire(ctx, now); err != nil {
				t.Fatal(err)
			}
			m.Expire(now)
		}
		b := st.NewBatch()
		var recs [][]codec.Event
		first := offset
		for range 1 + rng.IntN(3) {
			var evs []codec.Event
			for range 1 + rng.IntN(4) {
				ev := codec.Event{RoomID: fmt.Sprintf("i%d", rng.IntN(4)), UserID: fmt.Sprintf("u%d", rng.IntN(12)),
					TS: now.Add(-time.Duration(rng.Int64N(int64(50 * time.Minute)))).UnixMilli()}
				switch rng.IntN(6) {
				case 0:
					ev.Type, ev.Value, ev.Decimals = codec.TypeScore, 1+rng.Int64N(300), 1 // tenths: 0.1 … 30.0
				case 1:
					ev.Type = codec.TypeReceived
				case 2:
					ev.Type = codec.TypeRead
				case 3:
					ev.Type, ev.Value = codec.TypeTrade, 1+rng.Int64N(1000)
				default:
					ev.Type, ev.Value = codec.TypeGift, 1+rng.Int64N(50)
				}
				evs = append(evs, ev)
			}
			_ = b.Add("t", 0, offset, now, evs) // a late event's record still counts its others
			recs = append(recs, evs)
			offset++
		}
		b.Cover("t", 0, first, offset-1)
		if _, err := st.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
		m.Rebase(now) // Apply moves a decay board's base first, then adds
		for i, evs := range recs {
			m.Record("t", 0, first+int64(i), now, evs)
		}
		if step%25 == 24 || step == steps-1 {
			check(now)
		}
	}
}

// modelStandings is what the model says member's standings are on boards
// (indexes into bs) at now.
func modelStandings(m *boardmodel.Model, bs []*boarddef.Board, boards []string, member string, now time.Time) board.MemberStandings {
	out := board.MemberStandings{Member: member}
	for _, name := range boards {
		bi := -1
		for i, b := range bs {
			if b.Name() == name {
				bi = i
			}
		}
		b := bs[bi]
		got := board.Standings{Board: name}
		windows := b.Windows()
		if len(windows) == 0 {
			windows = []string{""}
		}
		for j, w := range windows {
			var ranking []boardmodel.Entry
			switch b.Kind() {
			case boarddef.Periodic:
				got.Period = b.Period(now).Label
				ranking = m.Ranking(bi, got.Period, 0)
			case boarddef.Total:
				ranking = m.TotalRanking(bi, now)
			case boarddef.Rolling:
				if b.HalfLife() > 0 {
					ranking = m.RollingDecayRanking(bi, now)
				} else {
					ranking = m.Ranking(bi, "", j)
				}
			default:
				ranking = m.Ranking(bi, "", j)
			}
			s := board.Standing{Window: w}
			for _, e := range ranking {
				if e.Member == member {
					s.Rank, s.Total, s.ReachedAt = e.Rank, e.Total, e.ReachedAt
				}
			}
			got.Standings = append(got.Standings, s)
		}
		out.Boards = append(out.Boards, got)
	}
	return out
}

func equalStandings(a, b board.MemberStandings) bool {
	if a.Member != b.Member || len(a.Boards) != len(b.Boards) {
		return false
	}
	for i := range a.Boards {
		x, y := a.Boards[i], b.Boards[i]
		if x.Board != y.Board || x.Period != y.Period || len(x.Standings) != len(y.Standings) {
			return false
		}
		for j := range x.Standings {
			if x.Standings[j] != y.Standings[j] {
				return false
			}
		}
	}
	return true
}

// checkStandingsAgainstModel reads every user (and one never seen) on the
// boards that rank users, the default of a member read, and checks each
// standing against the model: ranks and totals in the current week, every
// window, the all-time and the decayed rankings; 0 where a member is not
// ranked. It returns how many standings were ranked.
func checkStandingsAgainstModel(t *testing.T, st *board.Store, m *boardmodel.Model, bs []*boarddef.Board, now time.Time) int {
	t.Helper()
	boards := st.UserBoards()
	members := []string{"nobody"}
	for u := range 12 {
		members = append(members, fmt.Sprintf("u%d", u))
	}
	got, err := st.Standings(context.Background(), boards, members)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(members) {
		t.Fatalf("%d members read, want %d", len(got), len(members))
	}
	ranked := 0
	for i, member := range members {
		want := modelStandings(m, bs, boards, member, now)
		if !equalStandings(got[i], want) {
			t.Fatalf("at %s, %s:\n redis %+v\n model %+v", now.Format(time.RFC3339), member, got[i], want)
		}
		for _, b := range got[i].Boards {
			for _, s := range b.Standings {
				if s.Rank > 0 {
					ranked++
				}
			}
		}
	}
	return ranked
}

// TestStandingsAgainstModel feeds the boards for several simulated hours
// (across a Shanghai week boundary, with windows expiring and the decay
// board's values read at the clock) and reads every member on every user
// board in one call, against the model; the read is one pipeline of at
// most one script call per board.
func TestStandingsAgainstModel(t *testing.T) {
	bs := memberBoards(t)
	rdb := testenv.StartRedis(t).Client()
	cnt := &pipelineCounter{}
	rdb.AddHook(cnt)
	st := board.NewStore(rdb, "test", bs)
	m := boardmodel.New(bs)
	// Sunday 20:00 in Shanghai: the week turns at 16:00 UTC.
	start := time.Date(2027, 3, 7, 12, 0, 0, 0, time.UTC)
	ranked, checks := 0, 0
	feedMembers(t, st, m, start, 150, 1, func(now time.Time) {
		cnt.reset()
		ranked += checkStandingsAgainstModel(t, st, m, bs, now)
		checks++
		pipes, cmds := cnt.reset()
		// One pipeline (the scripts were loaded by Apply: no NOSCRIPT
		// retry), one script call per hash slot: here a board's rankings
		// share its slot.
		if pipes != 1 || cmds < 1 || cmds > len(st.UserBoards()) {
			t.Fatalf("the read took %d pipelines of %d commands, want one of 1..%d", pipes, cmds, len(st.UserBoards()))
		}
	})
	if ranked == 0 || checks < 3 {
		t.Fatalf("%d checks found %d ranked standings; the test reads nothing", checks, ranked)
	}
}

// TestStandingsOnCluster runs the same reads against a 3-master Redis
// Cluster: the rankings of one call live on several masters, so every
// script call must hold the keys of one slot only (a script given keys of
// two slots fails with CROSSSLOT).
func TestStandingsOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	c := testenv.StartRedisCluster(t)
	bs := memberBoards(t)
	st := board.NewStore(c.Client(), "test", bs)
	if err := st.Adopt(context.Background(), "g1"); err != nil {
		t.Fatal(err)
	}
	m := boardmodel.New(bs)
	ranked := 0
	feedMembers(t, st, m, time.Date(2027, 3, 7, 14, 0, 0, 0, time.UTC), 75, 2, func(now time.Time) {
		ranked += checkStandingsAgainstModel(t, st, m, bs, now)
	})
	if ranked == 0 {
		t.Fatal("no member was ranked anywhere")
	}
}

// TestStandingsItems reads the items of seed 002 (a board ranking room
// ids, outside the default) on all five windows, and a page of friends on
// one board: the standings come in the order asked.
func TestStandingsItems(t *testing.T) {
	bs := memberBoards(t)
	rdb := testenv.StartRedis(t).Client()
	st := board.NewStore(rdb, "test", bs)
	m := boardmodel.New(bs)
	feedMembers(t, st, m, time.Date(2027, 5, 1, 0, 0, 0, 0, time.UTC), 40, 3, func(now time.Time) {
		for _, boards := range [][]string{{"item-trades"}, {"weekly-read", "item-trades", "weekly-received"}} {
			members := []string{"i3", "i0", "u4", "i2", "i1"}
			got, err := st.Standings(context.Background(), boards, members)
			if err != nil {
				t.Fatal(err)
			}
			for i, member := range members {
				if want := modelStandings(m, bs, boards, member, now); !equalStandings(got[i], want) {
					t.Fatalf("%v %s:\n redis %+v\n model %+v", boards, member, got[i], want)
				}
			}
			if w := got[0].Boards[len(boards)/2].Standings; len(w) != 5 || w[4].Window != "24h" {
				t.Fatalf("item-trades windows %+v", w)
			}
		}
	})
	if us := st.UserBoards(); strings.Contains(strings.Join(us, ","), "item-trades") || len(us) != 8 {
		t.Fatalf("user boards %v: want every board but item-trades", us)
	}
}

// TestStandingsErrors: the limits and refusals of a member read.
func TestStandingsErrors(t *testing.T) {
	bs := memberBoards(t)
	st := board.NewStore(testenv.StartRedis(t).Client(), "test", bs)
	many := make([]string, board.MaxMembers+1)
	for i := range many {
		many[i] = fmt.Sprintf("u%d", i)
	}
	for _, c := range []struct {
		boards, members []string
		want            error
		has             string
	}{
		{[]string{"all-time"}, nil, boarddef.ErrBadParam, "0 members"},
		{[]string{"all-time"}, many, boarddef.ErrBadParam, "101 members"},
		{[]string{"all-time"}, []string{"u1", "u1"}, boarddef.ErrBadParam, "listed twice"},
		{[]string{"all-time"}, []string{"a b"}, boarddef.ErrBadParam, `member "a b"`},
		{[]string{"all-time"}, []string{""}, boarddef.ErrBadParam, `member ""`},
		{nil, []string{"u1"}, boarddef.ErrBadParam, "no boards"},
		{[]string{"all-time", "all-time"}, []string{"u1"}, boarddef.ErrBadParam, "all-time is listed twice"},
		{[]string{"all-time", "nope"}, []string{"u1"}, boarddef.ErrUnknownBoard, `"nope"`},
	} {
		_, err := st.Standings(context.Background(), c.boards, c.members)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.has) {
			t.Errorf("%v %v: %v, want %v with %q", c.boards, c.members, err, c.want, c.has)
		}
	}
	// MaxMembers members are fine, and none is ranked on an empty Redis.
	got, err := st.Standings(context.Background(), []string{"all-time", "user-trades"}, many[:board.MaxMembers])
	if err != nil {
		t.Fatal(err)
	}
	for _, ms := range got {
		for _, b := range ms.Boards {
			for _, s := range b.Standings {
				if s.Rank != 0 || s.Total != 0 {
					t.Fatalf("%s on %s: %+v on an empty Redis", ms.Member, b.Board, s)
				}
			}
		}
	}
}

// BenchmarkStandings reads 1 and 100 members on the seven user boards of
// memberBoards (11 rankings) in one call, against a local redis-server
// holding 1000 ranked users.
func BenchmarkStandings(b *testing.B) {
	bs := memberBoards(b)
	rdb := testenv.StartRedis(b).Client()
	st := board.NewStore(rdb, "test", bs)
	now := time.Date(2027, 3, 10, 12, 0, 0, 0, time.UTC)
	st.SetClock(func() time.Time { return now })
	ctx := context.Background()
	for off := range int64(10) {
		batch := st.NewBatch()
		var evs []codec.Event
		for u := range 100 {
			user := fmt.Sprintf("u%d", int(off)*100+u)
			ts := now.Add(-time.Duration(u) * time.Second).UnixMilli()
			for _, ty := range []codec.Type{codec.TypeScore, codec.TypeReceived, codec.TypeRead, codec.TypeTrade, codec.TypeGift} {
				evs = append(evs, codec.Event{RoomID: "i1", UserID: user, Type: ty, Value: int64(1 + u), TS: ts})
			}
		}
		if err := batch.Add("t", 0, off, now, evs); err != nil {
			b.Fatal(err)
		}
		if _, err := st.Apply(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	// The same single member read the way a client had to before: one
	// Member call (one round trip) per ranking.
	b.Run("members=1/member-per-ranking", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, name := range st.UserBoards() {
				bd, _ := st.Board(name)
				windows := bd.Windows()
				if bd.Kind() != boarddef.Windows {
					windows = []string{""}
				}
				for _, w := range windows {
					if _, err := st.Member(ctx, name, "u7", "", w); err != nil && !errors.Is(err, boarddef.ErrUnknownMember) {
						b.Fatal(err)
					}
				}
			}
		}
	})
	for _, n := range []int{1, 100} {
		members := make([]string, n)
		for i := range members {
			members[i] = fmt.Sprintf("u%d", i*7)
		}
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := st.Standings(ctx, st.UserBoards(), members); err != nil {
					b.Fatal(err)
				}
			}
			// Redis's own time in the scripts, which a loaded machine
			// disturbs less than the wall clock.
			stats, err := rdb.Info(ctx, "commandstats").Result()
			if err != nil {
				b.Fatal(err)
			}
			for _, line := range strings.Split(stats, "\n") {
				if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:"); ok {
					var calls, usec int64
					for _, kv := range strings.Split(strings.TrimSpace(rest), ",") {
						k, v, _ := strings.Cut(kv, "=")
						switch k {
						case "calls":
							calls, _ = strconv.ParseInt(v, 10, 64)
						case "usec":
							usec, _ = strconv.ParseInt(v, 10, 64)
						}
					}
					b.ReportMetric(float64(usec)/float64(b.N), "redis-µs/op")
					b.ReportMetric(float64(calls)/float64(b.N), "scripts/op")
				}
			}
		})
	}
}
