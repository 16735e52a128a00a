package processor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/wal"
)

// TestTimerWaitsForRebuild: after Redis lost its data, no list is stored
// before the rooms' seqs are seeded from the output topic. An idle
// processor notices the loss at its generation check and starts the
// rebuild, which cannot read the output topic (ListOffsets fails); another
// writer that did not notice the loss yet meanwhile applies a member to
// the emptied room and enters it in the due set. The hysteresis timer must
// not step that room (it would store seq 1 again, over an empty stable
// hash, and publish it with other content), and the idle checks must retry
// the rebuild until it succeeds. Then the room goes on from the last seq
// published, each seq with one content.
func TestTimerWaitsForRebuild(t *testing.T) {
	w := newHystWorld(t)
	core, logs := observer.New(zapcore.WarnLevel)
	lg := zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core))
	p, _ := w.startWith(10*time.Millisecond, func(c *processor.Config) {
		c.GenerationCheckEvery = 20 * time.Millisecond
		c.Retry.Backoff = 20 * time.Millisecond
		c.Logger = lg
	})
	w.send(0, "a audio 1", "a volume 500", "b audio 1", "b volume 400", "c audio 1", "c volume 300")
	w.expect(1, 0, "a", "b", "c")
	w.send(100, "d audio 1", "d volume 350") // waits its dwell, then the timer promotes it
	w.expect(2, 1100, "a", "b", "d")
	waitNoDue(t, w.rc)

	ctx := context.Background()
	fault := w.kafka.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: w.topics.TopN, Count: -1})
	if err := w.rc.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// The other writer: a member applied to the emptied room, and the
	// room's deadline, as a StoreStable whose compare-and-set failed on
	// the new data set still enters it.
	other, err := sink.New(w.rc, sink.Config{Env: env, TopN: 3})
	if err != nil {
		t.Fatal(err)
	}
	var z ranking.MemberState
	for _, ev := range []codec.Event{{Type: codec.TypeAudio, Value: 1}, {Type: codec.TypeVolume, Value: 900}} {
		ev.RoomID, ev.UserID, ev.TS = hystRoom, "z", w.t0+200
		z.Apply(&ev)
	}
	if _, err := other.Apply(ctx, []ranking.RoomUpdate{{Room: hystRoom, Parts: []ranking.Part{{Topic: "elsewhere", Last: 1,
		Members: []ranking.MemberUpdate{{UserID: "z", State: z}}}}}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.rc.ZAdd(ctx, "rostrum:"+env+":due", redis.Z{Score: float64(w.t0 + 200), Member: hystRoom}).Err(); err != nil {
		t.Fatal(err)
	}

	// The idle checks find the rebuild failing, again and again; the timer
	// looks for due rooms between them.
	deadline := time.Now().Add(30 * time.Second)
	for logs.FilterMessageSnippet("rebuild").FilterMessageSnippet("failed").Len() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the rebuild did not fail three times: %v", logs.All())
		}
		time.Sleep(10 * time.Millisecond)
	}
	fault.Remove() // (the test reads the topic only now: its reads list offsets too)
	for p.Stats().RedisResets.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no rebuild after the output topic became readable")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if list, _ := w.waitOutput(3); !slices.Equal(list, []string{"a", "b", "z"}) {
		t.Fatalf("seq 3 after the rebuild: %v, want [a b z]", list)
	}
	seen := map[int64]string{}
	for _, r := range w.kafka.ReadAll(w.topics.TopN) {
		var o codec.Output
		if err := json.Unmarshal(r.Value, &o); err != nil {
			t.Fatal(err)
		}
		if prev, ok := seen[o.Seq]; ok && prev != string(r.Value) {
			t.Fatalf("seq %d published with different contents:\n  %s\n  %s", o.Seq, prev, r.Value)
		}
		seen[o.Seq] = string(r.Value)
	}
}

// failingBoards is a board store whose next Apply, once armed, fails as a
// round trip to a dying Redis would, and whose Apply after that finds Redis
// emptied (FLUSHALL first).
type failingBoards struct {
	processor.BoardStore
	rc    *redis.Client
	armed atomic.Int32 // 2: fail the next Apply, 1: flush before the next
}

func (f *failingBoards) Apply(ctx context.Context, b *board.Batch) (board.Result, error) {
	switch f.armed.Load() {
	case 2:
		f.armed.Store(1)
		return board.Result{}, errors.New("connection reset by peer")
	case 1:
		f.armed.Store(0)
		if err := f.rc.FlushAll(ctx).Err(); err != nil {
			return board.Result{}, err
		}
	}
	return f.BoardStore.Apply(ctx, b)
}

// TestStoredOutputsDroppedByRebuild: a batch stores a room's new list (seq
// 2, pending in Redis) while its board round trip, run beside it, fails;
// when the batch applies its board events again, Redis has lost its data.
// The rebuild cannot see the pending list (gone with the data): it seeds
// seq 1 from the output topic, replays the WAL, this batch included, and
// publishes the room's list as seq 2. The batch must then not publish the
// list it stored before the loss, another content under the same seq.
func TestStoredOutputsDroppedByRebuild(t *testing.T) {
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t, testenv.WithTopics(1, topics.All()...))
	rc := testenv.StartRedis(t).Client()
	bs, err := boarddef.Compile([]boarddef.Config{{Name: "gifts", Events: []string{"gift"}, Member: "room_id", Kind: "periodic", Period: "day"}})
	if err != nil {
		t.Fatal(err)
	}
	fb := &failingBoards{BoardStore: board.NewStore(rc, env, bs), rc: rc}
	p, _ := startBoardProcessor(t, k, rc, t.TempDir(), bs, func(c *processor.Config) {
		c.BoardStore = fb
		c.Logger = zaptest.NewLogger(t)
		c.Stable.Strategy = processor.StabilityMerge
		c.Retry.Backoff = 20 * time.Millisecond
	})
	const room = "r-fb"
	t0 := time.Now().Add(-time.Minute).UnixMilli()
	send := func(evs ...string) {
		k.Produce(topics.RTC, []byte(room), []byte("["+strings.Join(evs, ",")+"]"))
	}
	ev := func(user, typ string, value, at int64) string {
		return fmt.Sprintf(`{"room_id":%q,"user_id":%q,"type":%q,"value":%d,"ts":%d}`, room, user, typ, value, t0+at)
	}
	outputs := func() []codec.Output {
		var out []codec.Output
		for _, r := range k.ReadAll(topics.TopN) {
			var o codec.Output
			if err := json.Unmarshal(r.Value, &o); err != nil {
				t.Fatal(err)
			}
			out = append(out, o)
		}
		return out
	}
	waitRecords := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for p.Stats().Records.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d records, want %d", p.Stats().Records.Load(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	send(ev("a", "volume", 500, 0), ev("b", "volume", 400, 0), ev("c", "volume", 300, 0),
		fmt.Sprintf(`{"type":"gift","room_id":%q,"user_id":"u","value":1,"ts":%d}`, room, t0))
	waitRecords(1)
	fb.armed.Store(2)
	// d takes c's slot; c's leave is the batch's newest event, so the
	// batch's list says ts t0+200 where the rebuilt one says d's time.
	send(ev("d", "volume", 450, 100), fmt.Sprintf(`{"room_id":%q,"user_id":"c","type":"leave","ts":%d}`, room, t0+200),
		fmt.Sprintf(`{"type":"gift","room_id":%q,"user_id":"u","value":1,"ts":%d}`, room, t0+100))
	waitRecords(2)
	if p.Stats().RedisResets.Load() == 0 {
		t.Fatal("the batch did not meet the data loss")
	}
	seen := map[int64]codec.Output{}
	for _, o := range outputs() {
		if prev, ok := seen[o.Seq]; ok && fmt.Sprint(prev) != fmt.Sprint(o) {
			t.Fatalf("seq %d published with different contents:\n  %+v\n  %+v", o.Seq, prev, o)
		}
		seen[o.Seq] = o
	}
	if last := seen[int64(len(seen))]; len(seen) != 2 || len(last.Top) != 3 || last.Top[2].UserID != "d" {
		t.Fatalf("outputs %+v, want seq 1 [a b c] and seq 2 [a b d]", seen)
	}
}

// flushBetweenTrips is a go-redis hook that, once armed, empties Redis
// (FLUSHALL through rc, another client) right after the next apply round
// trip (the pipeline that peeks at the due set): Redis loses its data
// between the two round trips of one Apply.
type flushBetweenTrips struct {
	rc    *redis.Client
	armed atomic.Bool
	err   atomic.Value
}

func (h *flushBetweenTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *flushBetweenTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *flushBetweenTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return c.Name() == "zrange" }) && h.armed.CompareAndSwap(true, false) {
			if ferr := h.rc.FlushAll(ctx).Err(); ferr != nil {
				h.err.Store(ferr)
			}
		}
		return err
	}
}

// TestNoSeqFromAnEmptiedRedis: Redis loses its data between the two round
// trips of one apply. The room's plan from the state cache is refused in
// the first (another writer changed the room), which also finds the
// generation marker in place; the room is then read from the emptied
// Redis in the second and found without a stable list, seq 0. The
// batch must not store and publish that room's next list as seq 1 (seq 1
// went out before, with other content): the apply reports the loss, and
// the rebuild seeds the seq from the output topic and publishes seq 2.
func TestNoSeqFromAnEmptiedRedis(t *testing.T) {
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t, testenv.WithTopics(1, topics.All()...))
	rdb := testenv.StartRedis(t)
	rc := rdb.Client()
	hook := &flushBetweenTrips{rc: rdb.Client()}
	rc.AddHook(hook)
	store, err := sink.New(rc, sink.Config{Env: env, CacheMembers: sink.DefaultCacheMembers})
	if err != nil {
		t.Fatal(err)
	}
	log, err := wal.Open(t.TempDir(), wal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p, err := processor.New(ctx, processor.Config{
		Brokers: k.Seeds, Env: env, Decode: codec.DecodeConfig{MaxFutureSkew: time.Minute},
		KafkaOpts: testenv.FastGroupOpts(), Logger: zaptest.NewLogger(t),
		Stable: processor.StableConfig{Strategy: processor.StabilityMerge}, Retry: processor.RetryConfig{Backoff: 20 * time.Millisecond},
	}, store, log)
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

	const room = "r-gap"
	t0 := time.Now().Add(-time.Minute).UnixMilli()
	send := func(evs ...string) {
		k.Produce(topics.RTC, []byte(room), []byte("["+strings.Join(evs, ",")+"]"))
	}
	ev := func(user string, value, at int64) string {
		return fmt.Sprintf(`{"room_id":%q,"user_id":%q,"type":"volume","value":%d,"ts":%d}`, room, user, value, t0+at)
	}
	outputs := func(n int) []codec.Output {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var out []codec.Output
			for _, r := range k.ReadAll(topics.TopN) {
				var o codec.Output
				if err := json.Unmarshal(r.Value, &o); err != nil {
					t.Fatal(err)
				}
				out = append(out, o)
			}
			if len(out) >= n {
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d outputs, want %d: %+v", len(out), n, out)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	send(ev("a", 500, 0), ev("b", 400, 0), ev("c", 300, 0))
	outputs(1)
	waitRecords(t, p, 1) // its acknowledgement is queued for the next apply

	// Another writer changes the room: the cached plan of the next batch is
	// refused and the room goes to the second round trip.
	other, err := sink.New(rdb.Client(), sink.Config{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	var z ranking.MemberState
	zev := codec.Event{Type: codec.TypeVolume, Value: 100, RoomID: room, UserID: "z", TS: t0 + 50}
	z.Apply(&zev)
	if _, err := other.Apply(context.Background(), []ranking.RoomUpdate{{Room: room, Parts: []ranking.Part{{Topic: "elsewhere", Last: 1,
		Members: []ranking.MemberUpdate{{UserID: "z", State: z}}}}}}, nil); err != nil {
		t.Fatal(err)
	}

	hook.armed.Store(true)
	send(ev("d", 450, 100))
	out := outputs(2)
	if hook.armed.Load() {
		t.Fatal("Redis was not emptied between the round trips")
	}
	if err, _ := hook.err.Load().(error); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]codec.Output{}
	for _, o := range out {
		if prev, ok := seen[o.Seq]; ok && fmt.Sprint(prev) != fmt.Sprint(o) {
			t.Fatalf("seq %d published with different contents:\n  %+v\n  %+v", o.Seq, prev, o)
		}
		seen[o.Seq] = o
	}
	if p.Stats().RedisResets.Load() == 0 {
		t.Fatal("the apply did not report the data loss")
	}
	ids := func(o codec.Output) (l []string) {
		for _, m := range o.Top {
			l = append(l, m.UserID)
		}
		return l
	}
	if l := ids(seen[2]); !slices.Equal(l, []string{"a", "b", "c", "d"}) {
		t.Fatalf("seq 2 after the rebuild: %v, want [a b c d]", l)
	}
}
