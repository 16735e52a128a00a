package board_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/ranking"
)

// spreadBoards are hourly boards, each period under a hash tag of its own:
// a first-reached one whose score holds the state, and a capped one that
// saturates.
func spreadBoards(t *testing.T) []*boarddef.Board {
	t.Helper()
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "hourly", Events: []string{"gift"}, Member: "room_id", Kind: "periodic", Period: "hour",
			Tie: "first-reached", Retention: 60, Settle: "false"},
		{Name: "hourly-capped", Events: []string{"gift", "score"}, Member: "user_id", Kind: "periodic", Period: "hour",
			TZ: "Asia/Kolkata", MaxTotal: 150, Retention: 60, Settle: "false"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// hourlyFeed returns the batches of hours hours up to now: per hour, per
// partition of "in" (3), records of that hour; a record of each batch
// after the first carries an event of the previous hour's last seconds
// (within grace), so a batch meets two periods; every 7th hour a record
// removes a room from the hourly board, every 5th repeats an event id;
// with quiet, every 4th hour is followed by a batch of records without
// board events.
type feedRecord struct {
	partition int32
	offset    int64
	at        time.Time
	evs       []codec.Event
}

func hourlyFeed(start time.Time, hours int, quiet bool) [][]feedRecord {
	var out [][]feedRecord
	next := [3]int64{}
	for h := range hours {
		hs := start.Add(time.Duration(h) * time.Hour)
		var batch []feedRecord
		for p := range int32(3) {
			for r := range 6 {
				ts := hs.Add(time.Duration(5+r*9+int(p)) * time.Minute)
				evs := []codec.Event{
					{RoomID: fmt.Sprintf("r-%d", (h+r)%5), UserID: fmt.Sprintf("u-%d", (r*int(p+1))%4), Type: codec.TypeGift,
						Value: int64(1 + (h*7+r*3+int(p))%40), TS: ts.UnixMilli()},
				}
				if r == 0 && h > 0 {
					evs = append(evs, codec.Event{RoomID: "r-late", UserID: "u-late", Type: codec.TypeGift, Value: 3,
						TS: hs.Add(-10 * time.Second).UnixMilli()})
				}
				if r == 2 && h%5 == 0 {
					evs = append(evs, codec.Event{RoomID: "r-id", UserID: "u-id", Type: codec.TypeScore, Value: 50,
						ID: fmt.Sprintf("id-%d", h), TS: ts.UnixMilli()},
						codec.Event{RoomID: "r-id", UserID: "u-id", Type: codec.TypeScore, Value: 50,
							ID: fmt.Sprintf("id-%d", h), TS: ts.UnixMilli()})
				}
				at := ts.Add(time.Second)
				if r == 0 && h > 0 {
					at = hs.Add(20 * time.Second) // the previous hour's event is within grace
				}
				batch = append(batch, feedRecord{partition: p, offset: next[p], at: at, evs: evs})
				next[p]++
			}
		}
		if h%7 == 3 {
			batch = append(batch, feedRecord{partition: 1, offset: next[1], at: hs.Add(59 * time.Minute),
				evs: []codec.Event{{Type: codec.TypeRemove, Board: "hourly", RoomID: "r-2", UserID: "u-x", TS: hs.Add(59 * time.Minute).UnixMilli()}}})
			next[1]++
		}
		out = append(out, batch)
		if quiet && h%4 == 1 {
			// A batch without board events: its offsets go to the current
			// period, the period of its record times.
			var q []feedRecord
			for p := range int32(3) {
				at := hs.Add(58 * time.Minute)
				q = append(q, feedRecord{partition: p, offset: next[p], at: at,
					evs: []codec.Event{{RoomID: "r-q", UserID: "u-q", Type: codec.TypeJoin, TS: at.UnixMilli()}}})
				next[p]++
			}
			out = append(out, q)
		}
	}
	return out
}

// addFeed adds records to a store batch, covering their offsets as the
// processor does.
func addFeed(t *testing.T, b *board.Batch, recs []feedRecord) {
	t.Helper()
	for _, r := range recs {
		b.Cover("in", r.partition, r.offset, r.offset)
		if err := b.Add("in", r.partition, r.offset, r.at, r.evs); err != nil {
			t.Fatalf("add %d/%d: %v", r.partition, r.offset, err)
		}
	}
}

// TestSpreadPeriods feeds two hourly boards over 48 hours, on a single
// node and on the local 3-master cluster. Every batch is applied twice (the second is a
// redelivery, skipped whole). Every period of every board must equal the
// model; each period's applied ranges must be one range per partition
// (the covered offsets reach the current period even without events of
// it); the capped board's saturation counter, summed over its periods,
// must equal what Apply reported. On the cluster the 48 periods of a
// board must sit on more than one master.
func TestSpreadPeriods(t *testing.T) {
	if testing.Short() {
		t.Skip("48 hours of batches; skipped in -short mode")
	}
	t.Run("single", func(t *testing.T) { testSpreadPeriods(t, testenv.StartRedis(t).Client(), nil) })
	t.Run("cluster", func(t *testing.T) {
		c := testenv.StartRedisCluster(t)
		testSpreadPeriods(t, c.Client(), c)
	})
}

func testSpreadPeriods(t *testing.T, rdb redis.UniversalClient, cluster *testenv.RedisCluster) {
	ctx := context.Background()
	bs := spreadBoards(t)
	st := board.NewStore(rdb, "test", bs)
	if err := st.Adopt(ctx, "g1"); err != nil {
		t.Fatal(err)
	}
	m := boardmodel.New(bs)
	const hours = 48
	start := time.Now().UTC().Truncate(time.Hour).Add(-(hours - 1) * time.Hour)
	saturated := 0
	for _, recs := range hourlyFeed(start, hours, true) {
		for _, r := range recs {
			m.Record("in", r.partition, r.offset, r.at, r.evs)
		}
		for round := range 2 {
			b := st.NewBatch()
			addFeed(t, b, recs)
			res, err := st.Apply(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			if round == 1 && (res.Applied != 0 || res.Splits != 0) {
				t.Fatalf("redelivery applied %d events, split %d parts", res.Applied, res.Splits)
			}
			saturated += res.Saturated
		}
	}
	st.SetClock(func() time.Time { return start.Add(hours*time.Hour - time.Millisecond) }) // the last events' hour, in every zone

	for bi, b := range bs {
		labels := m.Periods(bi)
		if len(labels) < hours {
			t.Fatalf("%s: model has %d periods, want at least %d", b.Name(), len(labels), hours)
		}
		for _, l := range labels {
			want := m.Ranking(bi, l, 0)
			got, total := topEntries(t, st, b.Name(), l, "")
			if !slices.Equal(got, want) {
				t.Fatalf("%s %s:\n redis %v\n model %v", b.Name(), l, got, want)
			}
			if total != int64(len(want)) {
				t.Fatalf("%s %s: %d members, model %d", b.Name(), l, total, len(want))
			}
		}
	}
	if saturated == 0 {
		t.Fatal("the capped board never saturated: the counter check below proves nothing")
	}
	if _, sat, err := st.Counters(ctx, "hourly-capped"); err != nil || sat != int64(saturated) {
		t.Fatalf("hourly-capped saturated counter %d, %v; Apply reported %d", sat, err, saturated)
	}

	// Each period keeps its own ranges: one per
	// partition from the batches of its hour and the next (its events,
	// and the offsets of the batch without board events that follows
	// every 4th hour: the current period's), and one more per later batch
	// with a removal that lists it (hours h ≡ 3 mod 7) and is not adjacent
	// to its own; the gaps between hold no event of the period.
	for k, l := range m.Periods(0) {
		want := 1
		for h := k + 2; h < hours; h++ {
			if h%7 == 3 && (h > k+2 || (k+1)%4 == 1) {
				want++
			}
		}
		w, err := rdb.HGetAll(ctx, "rostrum:test:board:{hourly@"+l+"}:w").Result()
		if err != nil {
			t.Fatal(err)
		}
		if w["gen"] != "g1" {
			t.Fatalf("period %s: generation %q, want g1", l, w["gen"])
		}
		for p := range 3 {
			r := w["in/"+fmt.Sprint(p)]
			if n := len(strings.Split(r, ",")); r == "" || n != want {
				t.Fatalf("period %s partition %d: ranges %q, want %d ranges", l, p, r, want)
			}
		}
	}

	if cluster == nil {
		return
	}
	// Where the periods live: which master answers each period's slot.
	masters := func(keys []string) map[string]int {
		out := map[string]int{}
		for _, k := range keys {
			slot := board.KeySlot(k)
			for i := range 3 {
				n := cluster.Node(i).Client()
				if c, err := n.ClusterCountKeysInSlot(ctx, slot).Result(); err == nil && c > 0 {
					out[cluster.Addrs[i]]++
				}
			}
		}
		return out
	}
	for _, name := range []string{"hourly", "hourly-capped"} {
		var keys []string
		bi := slices.IndexFunc(bs, func(b *boarddef.Board) bool { return b.Name() == name })
		for _, l := range m.Periods(bi) {
			keys = append(keys, "rostrum:test:board:{"+name+"@"+l+"}:w")
		}
		on := masters(keys)
		t.Logf("%s: %d periods over the masters %v", name, len(keys), on)
		if len(on) < 2 {
			t.Fatalf("%s: every period on one master: %v", name, on)
		}
	}
}

// TestSpreadPeriodLostAlone loses one period's keys alone (as a cluster
// node that lost its data would) and applies an event of that period from
// a store that never registered it (another processor, after a partition
// moved): the period's registration is found, so its hash is not stamped
// again and the call answers ErrRedisReset; after Adopt, replaying every
// batch rebuilds the period to the model.
func TestSpreadPeriodLostAlone(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client()
	bs := spreadBoards(t)[:1]
	m := boardmodel.New(bs)
	start := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	feed := hourlyFeed(start, 4, false)
	a := board.NewStore(rdb, "test", bs)
	if err := a.Adopt(ctx, "g1"); err != nil {
		t.Fatal(err)
	}
	for _, recs := range feed[:3] {
		for _, r := range recs {
			m.Record("in", r.partition, r.offset, r.at, r.evs)
		}
		b := a.NewBatch()
		addFeed(t, b, recs)
		if _, err := a.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	other := board.NewStore(rdb, "test", bs)
	if err := other.Adopt(ctx, "g1"); err != nil {
		t.Fatal(err)
	}
	lost := bs[0].Period(start.Add(2 * time.Hour)).Label
	keys, err := rdb.Keys(ctx, "rostrum:test:board:{hourly@"+lost+"}:*").Result()
	if err != nil || len(keys) < 2 { // z and w (the score holds the state: no m)
		t.Fatalf("keys of period %s: %v %v", lost, keys, err)
	}
	if err := rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}

	// The next hour's batch carries an event of the lost period (within
	// grace): its call must be refused.
	for _, r := range feed[3] {
		m.Record("in", r.partition, r.offset, r.at, r.evs)
	}
	b := other.NewBatch()
	addFeed(t, b, feed[3])
	if _, err := other.Apply(ctx, b); !errors.Is(err, ranking.ErrRedisReset) {
		t.Fatalf("apply after period %s lost its keys: %v, want ErrRedisReset", lost, err)
	}
	// The processor adopts again and replays its log, in any order.
	if err := other.Adopt(ctx, "g1"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, 0, 2, 3} { // out of order, the removal (hour 3) last as it came
		b := other.NewBatch()
		addFeed(t, b, feed[k])
		if _, err := other.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	other.SetClock(func() time.Time { return start.Add(3 * time.Hour) })
	for _, l := range m.Periods(0) {
		want := m.Ranking(0, l, 0)
		got, _ := topEntries(t, other, "hourly", l, "")
		if !slices.Equal(got, want) {
			t.Fatalf("%s after the replay:\n redis %v\n model %v", l, got, want)
		}
	}
}

// TestSpreadPrune: the keys of a removed periodic board are found
// under its name (not "name@label") and deleted, on the cluster too,
// where one UNLINK may only name keys of one slot.
func TestSpreadPrune(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	ctx := context.Background()
	c := testenv.StartRedisCluster(t)
	rdb := c.Client()
	bs := spreadBoards(t)[:1]
	st := board.NewStore(rdb, "test", bs)
	if err := st.Adopt(ctx, "g1"); err != nil {
		t.Fatal(err)
	}
	start := time.Now().UTC().Truncate(time.Hour).Add(-5 * time.Hour)
	for _, recs := range hourlyFeed(start, 6, false) {
		b := st.NewBatch()
		addFeed(t, b, recs)
		if _, err := st.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	orphans, err := board.Orphans(ctx, rdb, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(orphans) != 1 || len(orphans["hourly"]) < 6*2+1 {
		t.Fatalf("orphans: %d boards, %d keys of hourly", len(orphans), len(orphans["hourly"]))
	}
	n, err := board.DeleteKeys(ctx, rdb, orphans)
	if err != nil || n != int64(len(orphans["hourly"])) {
		t.Fatalf("deleted %d of %d keys: %v", n, len(orphans["hourly"]), err)
	}
	if again, err := board.Orphans(ctx, rdb, "test", nil); err != nil || len(again) != 0 {
		t.Fatalf("after the delete: %v %v", again, err)
	}
}

// TestRemoveFromSettled removes members with settled: true from a settling
// hourly board: the member leaves the live periods the removal lists and
// every settled snapshot kept (a call in each settled period's own slot,
// also for the settled periods the removal does not list: retention 1
// lists two), as in the model; a removal without settled leaves the
// snapshots.
func TestRemoveFromSettled(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client()
	bs, err := boarddef.Compile([]boarddef.Config{{Name: "h", Events: []string{"gift"}, Member: "room_id", Kind: "periodic",
		Period: "hour", SettleTop: 4, Retention: 1}})
	if err != nil {
		t.Fatal(err)
	}
	st := board.NewStore(rdb, "test", bs)
	if err := st.Adopt(ctx, "g1"); err != nil {
		t.Fatal(err)
	}
	m := boardmodel.New(bs)
	h0 := time.Now().UTC().Truncate(time.Hour).Add(time.Hour) // ahead of the Redis clock: retention 1 expires nothing
	off := int64(0)
	feed := func(at time.Time, evs ...codec.Event) {
		t.Helper()
		b := st.NewBatch()
		b.Cover("in", 0, off, off)
		if err := b.Add("in", 0, off, at, evs); err != nil {
			t.Fatal(err)
		}
		m.Record("in", 0, off, at, evs)
		off++
		if _, err := st.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	for h := range 3 {
		for i := range 6 {
			at := h0.Add(time.Duration(h)*time.Hour + time.Duration(i+1)*time.Minute)
			feed(at, codec.Event{RoomID: fmt.Sprintf("r%d", i), Type: codec.TypeGift, Value: int64(10 + i*(h+1)), TS: at.UnixMilli()})
		}
		settleAt := h0.Add(time.Duration(h+1)*time.Hour + 2*time.Minute)
		if _, err := st.Settle(ctx, settleAt); err != nil {
			t.Fatal(err)
		}
		m.Settle(settleAt)
	}
	at := h0.Add(3*time.Hour + 30*time.Minute) // lists the hours 3 and 2: 0 and 1 only through the index
	feed(at, codec.Event{Type: codec.TypeRemove, Board: "h", RoomID: "r5", Settled: true, TS: at.UnixMilli()})
	feed(at, codec.Event{Type: codec.TypeRemove, Board: "h", RoomID: "r4", TS: at.UnixMilli()})

	settled := m.SettledOf(0)
	if len(settled) != 3 {
		t.Fatalf("model settled %d periods", len(settled))
	}
	for _, w := range settled {
		p, err := st.Settled(ctx, "h", w.Period, 0, board.MaxPage)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]boardmodel.Entry, len(p.Top))
		for i, e := range p.Top {
			got[i] = boardmodel.Entry(e)
		}
		if !slices.Equal(got, w.Top) || !slices.ContainsFunc(got, func(e boardmodel.Entry) bool { return e.Member == "r4" }) {
			t.Fatalf("snapshot %s:\n redis %v\n model %v", w.Period, got, w.Top)
		}
	}
	st.SetClock(func() time.Time { return at })
	for _, l := range m.Periods(0)[2:] { // the others are no longer kept (retention 1)
		want := m.Ranking(0, l, 0)
		got, _ := topEntries(t, st, "h", l, "")
		if !slices.Equal(got, want) {
			t.Fatalf("%s:\n redis %v\n model %v", l, got, want)
		}
	}
}

// roundTrips counts a client's round trips (a command or a pipeline each)
// and its script calls.
type roundTrips struct{ trips, scripts atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.trips.Add(1)
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.trips.Add(1)
		for _, c := range cmds {
			if n := c.Name(); n == "evalsha" || n == "eval" {
				h.scripts.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

// TestSpreadOneCallPerBoard: the common batch, every event in the current
// period, costs one round trip with one script call per board; the first
// batch of a new period costs the registration on top (two round trips: the registry, then the stamp), once per store.
func TestSpreadOneCallPerBoard(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client()
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "hourly", Events: []string{"gift"}, Member: "room_id", Kind: "periodic", Period: "hour"},
		{Name: "daily", Events: []string{"gift"}, Member: "user_id", Kind: "periodic", Period: "day", Settle: "false"},
		{Name: "rolling", Events: []string{"gift"}, Member: "room_id", Kind: "rolling", Slice: time.Minute, Slices: 5},
	})
	if err != nil {
		t.Fatal(err)
	}
	st := board.NewStore(rdb, "test", bs)
	if err := st.Adopt(ctx, "g1"); err != nil {
		t.Fatal(err)
	}
	if err := st.LoadScripts(ctx); err != nil {
		t.Fatal(err)
	}
	h := &roundTrips{}
	rdb.AddHook(h)
	hour := time.Now().UTC().Truncate(time.Hour).Add(time.Hour) // a period not registered yet
	off := int64(0)
	apply := func(at time.Time) (trips, scripts int64) {
		t.Helper()
		h.trips.Store(0)
		h.scripts.Store(0)
		b := st.NewBatch()
		for p := range int32(2) {
			for i := range 3 {
				b.Cover("in", p, off, off)
				if err := b.Add("in", p, off, at, []codec.Event{{RoomID: fmt.Sprintf("r-%d", i), UserID: "u", Type: codec.TypeGift,
					Value: 1, TS: at.UnixMilli()}}); err != nil {
					t.Fatal(err)
				}
				off++
			}
		}
		if _, err := st.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
		return h.trips.Load(), h.scripts.Load()
	}
	if trips, scripts := apply(hour.Add(time.Minute)); trips != 3 || scripts != 3 {
		t.Fatalf("first batch of a period: %d round trips, %d scripts; want 3 (register, stamp, apply) and 3", trips, scripts)
	}
	for k := range 3 {
		if trips, scripts := apply(hour.Add(time.Duration(2+k) * time.Minute)); trips != 1 || scripts != 3 {
			t.Fatalf("batch %d in the period: %d round trips, %d scripts; want 1 and 3", k, trips, scripts)
		}
	}
	// Another store (a processor that never met the period): it registers
	// again, finds the label, does not stamp.
	st = board.NewStore(rdb, "test", bs)
	if err := st.Adopt(ctx, "g1"); err != nil {
		t.Fatal(err)
	}
	if trips, scripts := apply(hour.Add(9 * time.Minute)); trips != 2 || scripts != 3 {
		t.Fatalf("first batch of another store: %d round trips, %d scripts; want 2 (register, apply) and 3", trips, scripts)
	}
}

// TestRegistrySlot: the period registry hashes to the slot of the
// environment's generation marker (sink/generation.go), so no node can lose
// it without losing the marker.
func TestRegistrySlot(t *testing.T) {
	for _, env := range []string{"test", "prod", "a-b"} {
		reg := board.NewStore(nil, env, nil).RegistryKey()
		if board.KeySlot(reg) != board.KeySlot("rostrum:"+env+":generation") {
			t.Fatalf("env %s: registry slot %d, generation marker slot %d", env, board.KeySlot(reg), board.KeySlot("rostrum:"+env+":generation"))
		}
	}
}

// BenchmarkApplyPeriodic applies batches of 500 gifts of the current hour
// (4 partitions, 200 rooms) to an hourly board: the common batch costs one
// script call.
func BenchmarkApplyPeriodic(b *testing.B) {
	rdb := testenv.StartRedis(b).Client()
	ctx := context.Background()
	bs, err := boarddef.Compile([]boarddef.Config{{Name: "hourly", Events: []string{"gift"}, Member: "room_id",
		Kind: "periodic", Period: "hour", Tie: "first-reached"}})
	if err != nil {
		b.Fatal(err)
	}
	st := board.NewStore(rdb, "bench", bs)
	if err := st.Adopt(ctx, "g1"); err != nil {
		b.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Hour).Add(time.Hour + time.Minute)
	var next [4]int64
	batch := st.NewBatch()
	b.ResetTimer()
	for range b.N {
		batch.Reset()
		for i := range 500 {
			p := int32(i % 4)
			off := next[p]
			next[p]++
			batch.Cover("in", p, off, off)
			if err := batch.Add("in", p, off, at, []codec.Event{{RoomID: fmt.Sprintf("r-%d", i%200), Type: codec.TypeGift,
				Value: 1, TS: at.UnixMilli()}}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := st.Apply(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAdoptStampsOverAnotherGeneration: a board holding another
// generation than the one adopted (a processor that read the marker just
// before Redis lost its data stamped the emptied Redis with it, or the
// marker alone was lost) is stamped anew by Adopt, so its calls are not
// refused for ever; a board that lost its generation is refused until
// Adopt.
func TestAdoptStampsOverAnotherGeneration(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client()
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "hourly", Events: []string{"gift"}, Member: "room_id", Kind: "periodic", Period: "hour",
			Tie: "first-reached", Retention: 60, Settle: "false"},
		{Name: "rolling", Events: []string{"gift"}, Member: "room_id", Kind: "rolling", Slice: time.Hour, Slices: 24},
	})
	if err != nil {
		t.Fatal(err)
	}
	st := board.NewStore(rdb, "test", bs)
	if err := st.Adopt(ctx, "g-old"); err != nil {
		t.Fatal(err)
	}
	feed := hourlyFeed(time.Now().UTC().Truncate(time.Hour), 1, false)
	apply := func() error {
		b := st.NewBatch()
		addFeed(t, b, feed[0])
		_, err := st.Apply(ctx, b)
		return err
	}
	if err := apply(); err != nil {
		t.Fatal(err)
	}
	if err := st.Adopt(ctx, "g-new"); err != nil {
		t.Fatal(err)
	}
	if err := apply(); err != nil {
		t.Fatalf("apply after adopting g-new over boards stamped g-old: %v", err)
	}
	if err := rdb.HDel(ctx, "rostrum:test:board:{rolling}:w", "gen").Err(); err != nil { // the board lost its keys
		t.Fatal(err)
	}
	if err := apply(); !errors.Is(err, ranking.ErrRedisReset) {
		t.Fatalf("apply to a board that lost its generation: %v, want ErrRedisReset", err)
	}
}

// topEntries reads the whole ranking of board name's period or window from
// st as model entries, with the page's count of members.
func topEntries(t *testing.T, st *board.Store, name, period, window string) ([]boardmodel.Entry, int64) {
	t.Helper()
	page, err := st.Top(context.Background(), name, period, window, 0, board.MaxPage)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]boardmodel.Entry, len(page.Members))
	for i, e := range page.Members {
		got[i] = boardmodel.Entry(e)
	}
	return got, page.TotalMembers
}
