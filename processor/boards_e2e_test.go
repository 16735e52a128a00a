package processor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/examples"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/metrics"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/wal"
)

// seedBoards compiles examples/boards.yaml: every seed scenario.
func seedBoards(t *testing.T) []*boarddef.Board {
	t.Helper()
	bs, err := examples.Boards()
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

type boardRecord struct {
	rec *kgo.Record
	evs []codec.Event
}

// boardTrace makes n records of the seed scenarios' events around now: gifts
// to rooms, scores and the three actions of users, trades of items; some
// events late (8 days old), some retried by the producer with the same id,
// some records arrays of several events, some meeting events mixed in.
func boardTrace(rng *rand.Rand, now time.Time, n int, topics processor.Topics) []boardRecord {
	var out []boardRecord
	var sent []map[string]any
	for i := range n {
		k := 1 + rng.IntN(3)
		var arr []map[string]any
		var evs []codec.Event
		for range k {
			var ev map[string]any
			if len(sent) > 0 && rng.IntN(10) == 0 {
				ev = sent[rng.IntN(len(sent))] // a producer's retry
			} else {
				ts := now.Add(-time.Duration(rng.Int64N(int64(3 * time.Hour)))).UnixMilli()
				if rng.IntN(25) == 0 {
					ts = now.Add(-8 * 24 * time.Hour).UnixMilli() // late on most boards
				}
				ev = map[string]any{"room_id": fmt.Sprintf("r-%d", rng.IntN(8)), "user_id": fmt.Sprintf("u-%d", rng.IntN(12)), "ts": ts}
				switch rng.IntN(7) {
				case 0, 1:
					ev["type"], ev["value"] = "gift", 1+rng.IntN(100)
				case 2:
					ev["type"], ev["value"] = "score", 1+rng.IntN(5)
				case 3:
					ev["type"] = []string{"received", "read", "passed"}[rng.IntN(3)]
				case 4:
					ev["type"], ev["value"], ev["room_id"] = "trade", 1+rng.IntN(1000), fmt.Sprintf("item-%d", rng.IntN(5))
				case 5:
					ev["type"] = "join"
				default:
					ev["type"], ev["value"] = "volume", rng.IntN(1000)
				}
				if ev["type"] != "join" && ev["type"] != "volume" && rng.IntN(3) == 0 {
					ev["id"] = fmt.Sprintf("ev-%d", i*10+len(arr))
					sent = append(sent, ev)
				}
			}
			arr = append(arr, ev)
		}
		var value []byte
		if len(arr) == 1 {
			value, _ = json.Marshal(arr[0])
		} else {
			value, _ = json.Marshal(arr)
		}
		topic := topics.Inputs()[rng.IntN(3)]
		evs, err := codec.NewDecoder(codec.DecodeConfig{MaxFutureSkew: time.Minute}.WithDefaults()).Decode(nil, value, codec.SourceRTC, now)
		if err != nil {
			panic(fmt.Sprintf("%s: %v", value, err))
		}
		key := arr[0]["room_id"].(string)
		out = append(out, boardRecord{rec: &kgo.Record{Topic: topic, Key: []byte(key), Value: value, Timestamp: now}, evs: evs})
	}
	return out
}

// startBoardProcessor runs a processor with the seed boards until the test
// ends. Expiry runs only when the test calls it, so that time is explicit.
func startBoardProcessor(t *testing.T, k *testenv.Kafka, rc *redis.Client, walDir string, bs []*boarddef.Board, edit ...func(*processor.Config)) (*processor.Processor, *board.Store) {
	t.Helper()
	store, err := sink.New(rc, sink.Config{Env: env, CacheMembers: sink.DefaultCacheMembers})
	if err != nil {
		t.Fatal(err)
	}
	log, err := wal.Open(walDir, wal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	bst := board.NewStore(rc, env, bs)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := processor.Config{
		Brokers: k.Seeds, Env: env, MaxPollRecords: 50,
		Decode:    codec.DecodeConfig{MaxFutureSkew: time.Minute},
		KafkaOpts: testenv.FastGroupOpts(),
		Boards:    bs, BoardStore: bst, BoardExpireEvery: time.Hour,
	}
	for _, e := range edit {
		e(&cfg)
	}
	p, err := processor.New(ctx, cfg, store, log)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		log.Close()
	})
	return p, bst
}

func waitRecords(t *testing.T, p *processor.Processor, n int64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for p.Stats().Records.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("consumed %d of %d records", p.Stats().Records.Load(), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// compareBoards checks every board's current period (and the previous one)
// or every window, member by member, against the model.
func compareBoards(t *testing.T, bst *board.Store, m *boardmodel.Model, bs []*boarddef.Board, now time.Time) {
	t.Helper()
	ctx := context.Background()
	for bi, b := range bs {
		if b.Kind() == boarddef.Total || b.HalfLife() > 0 {
			// One ranking (a rolling decay board: its one window); a decay
			// board's values read at the store's clock (the tests fix it
			// at now).
			want := m.TotalRanking(bi, now)
			if b.Kind() == boarddef.Rolling {
				want = m.RollingDecayRanking(bi, now)
			}
			page, err := bst.Top(ctx, b.Name(), "", "", 0, board.MaxPage)
			if err != nil {
				t.Fatalf("%s: %v", b.Name(), err)
			}
			got := make([]boardmodel.Entry, len(page.Members))
			for i, e := range page.Members {
				got[i] = boardmodel.Entry(e)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s:\n redis %v\n model %v", b.Name(), got, want)
			}
			continue
		}
		var targets [][2]string
		if b.Kind() == boarddef.Periodic {
			cur := b.Period(now)
			prev := b.Period(cur.Start.Add(-time.Millisecond))
			targets = [][2]string{{cur.Label, ""}, {prev.Label, ""}}
		} else {
			for _, w := range b.Windows() {
				targets = append(targets, [2]string{"", w})
			}
		}
		for _, tg := range targets {
			j, _ := b.Window(tg[1])
			want := m.Ranking(bi, tg[0], j)
			page, err := bst.Top(ctx, b.Name(), tg[0], tg[1], 0, board.MaxPage)
			if err != nil {
				t.Fatalf("%s %v: %v", b.Name(), tg, err)
			}
			got := make([]boardmodel.Entry, len(page.Members))
			for i, e := range page.Members {
				got[i] = boardmodel.Entry(e)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s %v:\n redis %v\n model %v", b.Name(), tg, got, want)
			}
		}
	}
}

// TestBoardsEndToEnd feeds every seed scenario through the processor (kfake,
// WAL, real redis-server) and compares each board with the model: first
// normally, then after Redis lost its data (the rebuild from the WAL must
// count each record exactly once), then after expiry.
func TestBoardsEndToEnd(t *testing.T) {
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t, testenv.WithTopics(3, topics.All()...))
	r := testenv.StartRedis(t)
	rc := r.Client()
	bs := seedBoards(t)
	p, bst := startBoardProcessor(t, k, rc, t.TempDir(), bs)
	now := time.Now()
	clock := now
	bst.SetClock(func() time.Time { return clock })
	rng := rand.New(rand.NewPCG(5, 5))
	trace := boardTrace(rng, now, 600, topics)

	cl := k.Client()
	produce := func(recs []boardRecord) {
		for _, br := range recs {
			if err := cl.ProduceSync(context.Background(), br.rec).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := boardmodel.New(bs)
	m.Rebase(clock) // the decay board's base, as the first Apply sets it
	late := 0
	feedModel := func(recs []boardRecord) {
		for _, br := range recs {
			// Produced records carry their partition and offset now.
			if len(m.Record(br.rec.Topic, br.rec.Partition, br.rec.Offset, br.rec.Timestamp, br.evs)) > 0 {
				late++
			}
		}
	}

	produce(trace[:300])
	waitRecords(t, p, 300)
	feedModel(trace[:300])
	compareBoards(t, bst, m, bs, now)

	// Redis loses everything; the next batch notices and rebuilds from the
	// WAL, where board events must count once, not twice.
	if err := rc.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	produce(trace[300:])
	waitRecords(t, p, 600)
	feedModel(trace[300:])
	if p.Stats().RedisResets.Load() == 0 {
		t.Fatal("the Redis reset was not noticed")
	}
	compareBoards(t, bst, m, bs, now)

	// Expiry by an explicit clock: 4 hours on, the 3m, 10m and 1h windows
	// and some 6h slices have dropped the trace.
	later := now.Add(4 * time.Hour)
	if _, err := bst.Expire(context.Background(), later); err != nil {
		t.Fatal(err)
	}
	m.Expire(later)
	clock = later
	compareBoards(t, bst, m, bs, later)

	// Every record with a late event is in the DLQ with reason class late.
	dlqLate := 0
	for _, rec := range k.ReadAll(topics.DLQ) {
		if strings.Contains(string(rec.Headers[0].Value), "late") {
			dlqLate++
		}
	}
	if dlqLate != late || late == 0 {
		t.Fatalf("%d late records in the DLQ, the model has %d", dlqLate, late)
	}
}

// countingBoards counts the board applies of a processor.
type countingBoards struct {
	processor.BoardStore
	applies atomic.Int64
}

func (c *countingBoards) Apply(ctx context.Context, b *board.Batch) (board.Result, error) {
	c.applies.Add(1)
	return c.BoardStore.Apply(ctx, b)
}

// TestBoardCoverCarried: batches without board events cost no board round
// trip; the offsets they read are marked applied with the next batch that
// has board events, so each board keeps one applied range per partition.
func TestBoardCoverCarried(t *testing.T) {
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t, testenv.WithTopics(1, topics.All()...))
	rc := testenv.StartRedis(t).Client()
	bs := seedBoards(t)
	var counter *countingBoards
	obs := metrics.New(env)
	p, _ := startBoardProcessor(t, k, rc, t.TempDir(), bs, func(c *processor.Config) {
		counter = &countingBoards{BoardStore: c.BoardStore}
		c.BoardStore = counter
		c.Observer = obs
	})
	cl := k.Client()
	ts := time.Now().UnixMilli()
	rtc := topics.Inputs()[0]
	send := func(value string) {
		t.Helper()
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: rtc, Key: []byte("r-1"), Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	const meeting = 12
	for i := range meeting {
		send(fmt.Sprintf(`{"room_id":"r-1","user_id":"u-%d","type":"volume","value":%d,"ts":%d}`, i, 100+i, ts))
		waitRecords(t, p, int64(i+1)) // one batch each
	}
	if n := counter.applies.Load(); n > 1 {
		t.Fatalf("%d board applies for %d meeting-only batches, want at most the first", n, meeting)
	}
	send(fmt.Sprintf(`{"room_id":"r-1","user_id":"u-1","type":"gift","value":5,"ts":%d}`, ts))
	waitRecords(t, p, meeting+1)
	// One gift, counted by each board that counts gifts.
	gifts := 0
	for _, b := range bs {
		if b.Counts(codec.TypeGift) {
			gifts++
		}
	}
	if got := counterValue(t, obs, "rostrum_board_events_total", "counted"); got != float64(gifts) {
		t.Errorf("rostrum_board_events_total{result=counted} = %v, want %d", got, gifts)
	}
	for _, b := range bs {
		tag := b.Name() // the board's hash tag, or its period's (board/keys.go)
		if b.Kind() == boarddef.Periodic {
			tag += "@" + b.Period(time.UnixMilli(ts)).Label
		}
		w, err := rc.HGetAll(context.Background(), "rostrum:"+env+":board:{"+tag+"}:w").Result()
		if err != nil {
			t.Fatal(err)
		}
		got := w[rtc+"/0"]
		if want := fmt.Sprintf("0-%d", meeting); got != want {
			t.Errorf("board %s: applied ranges of %s/0 are %q, want %q (all fields %v)", b.Name(), rtc, got, want, w)
		}
	}
}

// counterValue returns the value of the counter name of m whose only label
// has the value label ("" for none).
func counterValue(t *testing.T, m *metrics.Processor, name, label string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() != "env" && l.GetValue() == label {
					return mt.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{%s}", name, label)
	return 0
}

// gatedStore holds the rooms' first Redis apply until the boards' apply has
// begun (gate closed), or 10 s; it records whether it had to give up.
type gatedStore struct {
	processor.Store
	gate   <-chan struct{}
	missed atomic.Bool
}

func (g *gatedStore) Apply(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack) ([]ranking.RoomState, error) {
	select {
	case <-g.gate:
	case <-time.After(10 * time.Second):
		g.missed.Store(true)
	}
	return g.Store.Apply(ctx, rooms, acks)
}

// gateBoards closes gate when its first Apply begins.
type gateBoards struct {
	processor.BoardStore
	once sync.Once
	gate chan struct{}
}

func (g *gateBoards) Apply(ctx context.Context, b *board.Batch) (board.Result, error) {
	g.once.Do(func() { close(g.gate) })
	return g.BoardStore.Apply(ctx, b)
}

// TestBoardsOverlapRooms: a batch holding board and meeting events applies
// the boards while the rooms are applied, not after them. The rooms' apply
// waits for the boards' to begin: done one after the other, it would wait in
// vain.
func TestBoardsOverlapRooms(t *testing.T) {
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t, testenv.WithTopics(1, topics.All()...))
	rc := testenv.StartRedis(t).Client()
	bs := seedBoards(t)
	s, err := sink.New(rc, sink.Config{Env: env, CacheMembers: sink.DefaultCacheMembers})
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	store := &gatedStore{Store: s, gate: gate}
	log, err := wal.Open(t.TempDir(), wal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := processor.New(ctx, processor.Config{
		Brokers: k.Seeds, Env: env, Decode: codec.DecodeConfig{MaxFutureSkew: time.Minute},
		KafkaOpts: testenv.FastGroupOpts(), // no dwell or grace: their zero values
		Boards:    bs, BoardStore: &gateBoards{BoardStore: board.NewStore(rc, env, bs), gate: gate},
	}, store, log)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	ts := time.Now().UnixMilli()
	v := fmt.Sprintf(`[{"room_id":"r-1","user_id":"u-1","type":"volume","value":300,"ts":%d},`+
		`{"room_id":"r-1","user_id":"u-2","type":"gift","value":5,"ts":%d}]`, ts, ts)
	if err := k.Client().ProduceSync(context.Background(), &kgo.Record{Topic: topics.Inputs()[0], Key: []byte("r-1"), Value: []byte(v)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitRecords(t, p, 1)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if store.missed.Load() {
		t.Fatal("the rooms' apply waited for the boards' in vain: the two ran one after the other")
	}
	if got := p.Stats().BoardEvents.Load(); got == 0 {
		t.Fatal("no board event counted")
	}
}
