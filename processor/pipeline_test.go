package processor_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/wal"
)

// heldStore holds the first meeting apply until release is closed, and
// records whether two applies ever ran at once.
type heldStore struct {
	*sink.Store
	log     *countingLog
	entered chan struct{} // closed when the first apply begins
	release chan struct{} // the first apply waits for it
	first   sync.Once
	atEntry int32 // WAL appends when the first apply began; read after entered

	inFlight, overlapped atomic.Int32
}

func (s *heldStore) gate() func() {
	if s.inFlight.Add(1) > 1 {
		s.overlapped.Add(1)
	}
	s.first.Do(func() {
		s.atEntry = s.log.appends.Load()
		close(s.entered)
		<-s.release
	})
	return func() { s.inFlight.Add(-1) }
}

func (s *heldStore) Apply(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack) ([]ranking.RoomState, error) {
	if len(rooms) > 0 {
		defer s.gate()()
	}
	return s.Store.Apply(ctx, rooms, acks)
}

func (s *heldStore) ApplyMerge(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack, merge ranking.StableStep) ([]ranking.RoomState, []ranking.Merged, error) {
	if len(rooms) > 0 {
		defer s.gate()()
	}
	return s.Store.ApplyMerge(ctx, rooms, acks, merge)
}

// countingLog signals appended after every WAL append, and keeps each
// appended batch's length.
type countingLog struct {
	*wal.Log
	appends  atomic.Int32
	appended chan struct{}

	mu    sync.Mutex
	sizes []int
}

func (l *countingLog) Append(recs []wal.Record) (uint64, error) {
	seq, err := l.Log.Append(recs)
	if err == nil {
		l.mu.Lock()
		l.sizes = append(l.sizes, len(recs))
		l.mu.Unlock()
		l.appends.Add(1)
		select {
		case l.appended <- struct{}{}:
		default:
		}
	}
	return seq, err
}

// heldRun is a running processor of a test world whose first meeting apply
// waits until its store's release is closed (heldStore), over a WAL that
// counts its appends (countingLog).
type heldRun struct {
	t     *testing.T
	w     *world
	p     *processor.Processor
	store *heldStore
	log   *countingLog
	done  chan error // Run's result
	cl    *kgo.Client
}

// startHeld starts a heldRun of w with MaxPollRecords 500, long idle
// polls (GenerationCheckEvery, DueInterval) and set's changes, and returns
// once the group assigned it every input partition. ctx stops it.
func startHeld(ctx context.Context, t *testing.T, w *world, set func(*processor.Config)) *heldRun {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: w.redis.Addr})
	t.Cleanup(func() { rc.Close() })
	rs, err := sink.New(rc, sink.Config{Env: env, CacheMembers: sink.DefaultCacheMembers})
	if err != nil {
		t.Fatal(err)
	}
	wl, err := wal.Open(t.TempDir(), wal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wl.Close() })
	h := &heldRun{t: t, w: w, done: make(chan error, 1), cl: w.kafka.Client()}
	h.log = &countingLog{Log: wl, appended: make(chan struct{}, 1)}
	h.store = &heldStore{Store: rs, log: h.log, entered: make(chan struct{}), release: make(chan struct{})}
	cfg := processor.Config{Brokers: w.kafka.Seeds, Env: env, MaxPollRecords: 500, GenerationCheckEvery: 30 * time.Second,
		Decode: codec.DecodeConfig{MaxFutureSkew: time.Minute}, Stable: processor.StableConfig{DueInterval: 30 * time.Second}}
	set(&cfg)
	if h.p, err = processor.New(ctx, cfg, h.store, h.log); err != nil {
		t.Fatal(err)
	}
	go func() { h.done <- h.p.Run(ctx) }()
	for h.p.Assigned() < 9 {
		select {
		case err := <-h.done:
			t.Fatalf("Run returned before the partitions were assigned: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return h
}

// produce sends the world's trace records of the indexes trace, and waits
// for their acknowledgements.
func (h *heldRun) produce(trace ...int) {
	h.t.Helper()
	recs := make([]*kgo.Record, 0, len(trace))
	for _, i := range trace {
		recs = append(recs, kafkaRecord(h.w.trace[i]))
	}
	if err := h.cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		h.t.Fatal(err)
	}
}

// TestPipelineOverlapsBatches: while a batch waits on Redis, the next poll
// batch is decoded and appended to the WAL (pipeline.go). The first batch's
// apply is held until a second WAL append happened; a processor that ran
// the stages one after the other would never append again and the test
// would fail at its deadline. Redis still sees one batch at a time, and the
// end state (Redis, outputs, DLQ, commits) equals the model's.
func TestPipelineOverlapsBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	w := newWorld(t, e2eTrace(5, 2000))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Produce only once the group assigned every input partition (as
	// startHeld does): a rebalance while the first apply is held would
	// rightly make the processor empty its pipeline first (it waits for the
	// held batch) and poll nothing more.
	h := startHeld(ctx, t, w, func(c *processor.Config) { c.PipelineBatches = true })
	p, store, log, done := h.p, h.store, h.log, h.done
	produce := func(trace []int) { t.Helper(); h.produce(trace...) }
	// The first record alone, so that the first batch holds it alone and
	// no later batch can be prepared before its apply is held; the rest
	// once that apply is held. A poll that comes back empty rightly drains
	// the pipeline (it waits for the held batch), so the polls here wait
	// long (DueInterval, GenerationCheckEvery) for the rest to arrive.
	if w.trace[0].Bad != "" {
		t.Fatalf("the trace's first record is bad (%s): the held apply would not be the first batch's", w.trace[0].Bad)
	}
	produce([]int{0})
	select {
	case <-store.entered:
	case err := <-done:
		t.Fatalf("Run returned before the first apply: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the first batch never reached Redis")
	}
	// A WAL append after the first apply began happened while that apply
	// was held.
	rest := make([]int, 0, len(w.trace)-1)
	for i := 1; i < len(w.trace); i++ {
		rest = append(rest, i)
	}
	produce(rest)
	deadline := time.After(time.Minute)
	for log.appends.Load() == store.atEntry {
		select {
		case <-log.appended:
		case <-deadline:
			close(store.release)
			t.Fatal("no batch was appended to the WAL while the first one waited on Redis: the stages did not overlap")
		}
	}
	close(store.release)
	w.waitCaughtUp(2 * time.Minute)
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	if n := store.overlapped.Load(); n != 0 {
		t.Errorf("%d meeting applies ran beside another: Redis must see the batches one at a time, in order", n)
	}
	if p.Stats().Batches.Load() < 2 {
		t.Errorf("%d batches, want at least 2", p.Stats().Batches.Load())
	}
	if p.Stats().Overlapped.Load() == 0 {
		t.Error("Stats.Overlapped is 0, though a batch was prepared while the held one was in stage 2")
	}
	w.check()
}

// TestPipelineAllowsRebalanceUnderLoad: records keep arriving, so every poll
// brings some and the pipeline never runs empty by itself; a second
// processor joins. The first must empty its pipeline and let the rebalance
// through as soon as the client reports it waiting
// (kgo.OnPartitionsCallbackBlocked). The group's rebalance timeout is a
// minute, longer than the trace takes to send, so a processor that held the
// rebalance back until its pipeline ran empty would let the trace run out
// first. The end state equals the model's.
func TestPipelineAllowsRebalanceUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("group test skipped in -short mode")
	}
	w := newWorld(t, e2eTrace(7, 20000))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slowRebalance := func(c *processor.Config) {
		c.KafkaOpts = append(testenv.FastGroupOpts(), kgo.RebalanceTimeout(time.Minute))
		c.PipelineBatches = true
	}
	p1, close1, err := startProcessorWith(ctx, w.kafka.Seeds, w.redis.Addr, t.TempDir(), 200, slowRebalance)
	if err != nil {
		t.Fatal(err)
	}
	defer close1()
	done1 := make(chan error, 1)
	go func() { done1 <- p1.Run(ctx) }()

	// Records arrive in small chunks, one every 5 ms, until the second
	// processor has partitions; the rest of the trace follows at once.
	cl := w.kafka.Client()
	next := 0
	send := func(n int) {
		t.Helper()
		recs := make([]*kgo.Record, 0, n)
		for ; n > 0 && next < len(w.trace); n-- {
			recs = append(recs, kafkaRecord(w.trace[next]))
			next++
		}
		if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for p1.Stats().Records.Load() == 0 {
		send(10)
		time.Sleep(5 * time.Millisecond)
	}
	ctx2, cancel2 := context.WithCancel(ctx)
	p2, close2, err := startProcessorWith(ctx2, w.kafka.Seeds, w.redis.Addr, t.TempDir(), 200, slowRebalance)
	if err != nil {
		t.Fatal(err)
	}
	defer close2()
	done2 := make(chan error, 1)
	go func() { done2 <- p2.Run(ctx2) }()
	startedAt := next
	for p2.Assigned() == 0 {
		if next == len(w.trace) {
			t.Fatalf("the second processor got no partition while %d records kept arriving: the first held the rebalance back", next-startedAt)
		}
		send(10)
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("sent %d records when p2 got partitions; started at %d", next, startedAt)
	send(len(w.trace))
	w.waitCaughtUp(2 * time.Minute)
	cancel2()
	if err := <-done2; err != nil {
		t.Fatalf("second processor: %v", err)
	}
	cancel()
	if err := <-done1; err != nil {
		t.Fatalf("first processor: %v", err)
	}
	w.check()
}
