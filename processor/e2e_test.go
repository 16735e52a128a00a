package processor_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/model"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/internal/testkit/trace"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/route"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/stability"
	"github.com/rostrumhq/rostrum/wal"
)

const env = "test"

// TestMain lets the test binary double as a processor process, so that the
// crash tests can SIGKILL a real process mid-batch.
func TestMain(m *testing.M) {
	if os.Getenv("ROSTRUM_E2E_CHILD") == "1" {
		os.Exit(runChild())
	}
	os.Exit(m.Run())
}

// startProcessor builds the real pipeline: WAL, Redis sink, processor.
func startProcessor(ctx context.Context, brokers []string, redisAddr, walDir string, maxPoll int) (*processor.Processor, func(), error) {
	return startProcessorWith(ctx, brokers, redisAddr, walDir, maxPoll, nil)
}

// startProcessorWith is startProcessor with the configuration edited by edit.
func startProcessorWith(ctx context.Context, brokers []string, redisAddr, walDir string, maxPoll int, edit func(*processor.Config)) (*processor.Processor, func(), error) {
	cfg := processor.Config{
		Brokers: brokers, Env: env, MaxPollRecords: maxPoll,
		Decode: codec.DecodeConfig{MaxFutureSkew: time.Minute},
		// The hysteresis without dwell or grace: the stable set is the raw
		// set after every batch, so the end state can be compared with the
		// model's at once. TestEndToEndHysteresis and TestHysteresis
		// exercise real waits.
		KafkaOpts: testenv.FastGroupOpts(),
	}
	if edit != nil {
		edit(&cfg)
	}
	rc := redis.NewClient(&redis.Options{Addr: redisAddr})
	store, err := sink.New(rc, sink.Config{Env: env, CacheMembers: sink.DefaultCacheMembers, Meeting: cfg.Meeting})
	if err != nil {
		return nil, nil, err
	}
	log, err := wal.Open(walDir, wal.Config{})
	if err != nil {
		return nil, nil, err
	}
	p, err := processor.New(ctx, cfg, store, log)
	if err != nil {
		log.Close()
		rc.Close()
		return nil, nil, err
	}
	return p, func() { log.Close(); rc.Close() }, nil
}

func runChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	p, closeFn, err := startProcessorWith(ctx, strings.Split(os.Getenv("ROSTRUM_E2E_BROKERS"), ","),
		os.Getenv("ROSTRUM_E2E_REDIS"), os.Getenv("ROSTRUM_E2E_WAL"), 500, childOptions)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	defer closeFn()
	fmt.Println("ready") // the signal handler is installed
	if err := p.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// childOptions applies the child's optional settings from its environment:
// ROSTRUM_E2E_SHUTDOWN (Config.ShutdownTimeout) and ROSTRUM_E2E_SESSION (the
// group session timeout, so that killed members stay in the group longer).
func childOptions(c *processor.Config) {
	// As rostrum run: the member file beside the WAL, so that a restart
	// evicts the member its killed predecessor left (docs/DESIGN.md §3.9);
	// without it kfake keeps a member killed while joining for ever.
	c.Group.MemberFile = filepath.Join(os.Getenv("ROSTRUM_E2E_WAL"), "group-member")
	if d, err := time.ParseDuration(os.Getenv("ROSTRUM_E2E_SHUTDOWN")); err == nil {
		c.ShutdownTimeout = d
	}
	if d, err := time.ParseDuration(os.Getenv("ROSTRUM_E2E_SESSION")); err == nil {
		c.KafkaOpts = append(c.KafkaOpts, kgo.SessionTimeout(d), kgo.RebalanceTimeout(d))
	}
}

// world is one end-to-end setup: a kfake broker, a real redis-server, and a
// generated trace already produced to the input topics.
type world struct {
	t      *testing.T
	kafka  *testenv.Kafka
	redis  *testenv.Redis
	rc     *redis.Client
	topics processor.Topics
	trace  []trace.Record
	model  *model.Model
}

func newWorld(t *testing.T, cfg trace.Config) *world {
	t.Helper()
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t, testenv.WithTopics(3, topics.All()...))
	r := testenv.StartRedis(t)
	w := &world{t: t, kafka: k, redis: r, rc: r.Client(), topics: topics, trace: trace.Generate(cfg)}

	w.model = model.New(codec.NewMeeting(codec.DefaultEpoch))
	for _, tr := range w.trace {
		for _, ev := range tr.Events {
			w.model.Apply(ev)
		}
	}
	return w
}

// produce sends the trace to the input topics in chunks of chunk records,
// pausing between chunks, so that faults hit a stream in motion. It returns
// a channel closed when everything is acknowledged.
func (w *world) produce(chunk int, pause time.Duration) <-chan error {
	cl := w.kafka.Client()
	recs := make([]*kgo.Record, 0, len(w.trace))
	for _, tr := range w.trace {
		recs = append(recs, kafkaRecord(tr))
	}
	done := make(chan error, 1)
	go func() {
		defer close(done)
		for len(recs) > 0 {
			n := min(chunk, len(recs))
			if err := cl.ProduceSync(context.Background(), recs[:n]...).FirstErr(); err != nil {
				done <- err
				return
			}
			recs = recs[n:]
			time.Sleep(pause)
		}
	}()
	return done
}

func kafkaRecord(tr trace.Record) *kgo.Record {
	return &kgo.Record{Topic: env + ".callbacks." + tr.Topic, Key: []byte(tr.Key), Value: tr.Value}
}

func (w *world) waitProduced(done <-chan error) {
	w.t.Helper()
	if err := <-done; err != nil {
		w.t.Fatalf("produce trace: %v", err)
	}
}

// waitCaughtUp waits until the group has committed every input record.
func (w *world) waitCaughtUp(timeout time.Duration) {
	w.t.Helper()
	w.kafka.WaitCaughtUp(w.t, "rostrum-"+env, 9, timeout, "")
}

// check compares Redis and the output topic with the model, and the DLQ
// with the bad records. It returns the number of output records read.
func (w *world) check() (outputs int) {
	t := w.t
	t.Helper()
	ctx := context.Background()

	// 1. Every room's ranking in Redis equals the model's, member by member,
	//    score by score, in order.
	rooms := w.model.Rooms()
	for _, room := range rooms {
		want := w.model.Ranking(room)
		got, err := w.rc.ZRevRangeWithScores(ctx, sink.RoomKeys(env, room).Ranking, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("room %s: %d ranked in Redis, model has %d", room, len(got), len(want))
		}
		for i := range want {
			if got[i].Member != want[i].UserID || got[i].Score != want[i].Score {
				t.Fatalf("room %s rank %d: Redis %v=%v, model %v=%v", room, i+1, got[i].Member, got[i].Score, want[i].UserID, want[i].Score)
			}
		}
	}

	// 2. Output topic: per room, seqs 1..n without gaps (a republished seq
	//    repeats identical content), consecutive lists keep shared members in
	//    their slots, and the last list is the model's top-7 set. (A list is
	//    published when its members or their slots change, not on every score
	//    change, so only membership is compared.)
	type out struct {
		codec.Output
		raw string
	}
	byRoom := map[string]map[int64]string{}
	last := map[string]out{}
	recs := w.kafka.ReadAll(w.topics.TopN)
	for _, r := range recs {
		testenv.WantRecordKind(t, r, "ranking.topn/1")
		var o codec.Output
		if err := json.Unmarshal(r.Value, &o); err != nil {
			t.Fatalf("output %q: %v", r.Value, err)
		}
		if string(r.Key) != o.RoomID {
			t.Fatalf("output key %q for room %q", r.Key, o.RoomID)
		}
		seqs := byRoom[o.RoomID]
		if seqs == nil {
			seqs = map[int64]string{}
			byRoom[o.RoomID] = seqs
		}
		if prev, dup := seqs[o.Seq]; dup && prev != string(r.Value) {
			t.Fatalf("room %s seq %d published twice with different content:\n%s\n%s", o.RoomID, o.Seq, prev, r.Value)
		}
		seqs[o.Seq] = string(r.Value)
		if o.Seq >= last[o.RoomID].Seq {
			last[o.RoomID] = out{o, string(r.Value)}
		}
	}
	for room, seqs := range byRoom {
		var prev []string
		for s := int64(1); s <= int64(len(seqs)); s++ {
			raw, ok := seqs[s]
			if !ok {
				t.Fatalf("room %s: seq %d missing (have %d seqs)", room, s, len(seqs))
			}
			var o codec.Output
			_ = json.Unmarshal([]byte(raw), &o)
			cur := make([]string, len(o.Top))
			for i, m := range o.Top {
				cur[i] = m.UserID
			}
			for i, m := range prev {
				if i < len(cur) && slices.Contains(cur, m) && cur[i] != m {
					t.Fatalf("room %s seq %d: %s moved from slot %d (%v → %v)", room, s, m, i, prev, cur)
				}
			}
			prev = cur
		}
	}
	for _, room := range rooms {
		want := w.model.Top(room, 7)
		got := last[room].Top
		if len(got) != len(want) {
			st, _ := w.rc.HGetAll(ctx, sink.RoomKeys(env, room).Stable).Result()
			t.Fatalf("room %s: last output has %d members, model top has %d (%s); stored stable %v", room, len(got), len(want), last[room].raw, st)
		}
		for _, m := range want {
			// A shown member's flags are never stale: a change of them
			// republishes the list (docs/DESIGN.md §10).
			if i := slices.IndexFunc(got, func(o codec.OutputMember) bool { return o.UserID == m.UserID }); i >= 0 {
				o := got[i]
				if o.ScreenShare != m.ScreenShare || o.Spotlight != m.Spotlight || o.Audio != m.Audio || o.Video != m.Video || o.Role != m.Role.String() {
					t.Fatalf("room %s: last output shows %s as %+v, the model has %+v", room, m.UserID, o, m)
				}
			}
			if !slices.ContainsFunc(got, func(o codec.OutputMember) bool { return o.UserID == m.UserID }) {
				st, _ := w.rc.HGetAll(ctx, sink.RoomKeys(env, room).Stable).Result()
				raw, _ := w.rc.ZRevRangeWithScores(ctx, sink.RoomKeys(env, room).Ranking, 0, 9).Result()
				t.Logf("stored stable: seq %s list %s pending %s", st["seq"], st["list"], st["pending"])
				t.Logf("raw top: %v", raw)
				t.Logf("model top: %v", w.model.Top(room, 9))
				t.Fatalf("room %s: model top member %s (score %v) missing from last output %s", room, m.UserID, m.Score, last[room].raw)
			}
		}
	}

	// 3. The DLQ holds exactly the bad records, each with a reason.
	var wantBad []string
	for _, tr := range w.trace {
		if !tr.Good() {
			wantBad = append(wantBad, string(tr.Value))
		}
	}
	var gotBad []string
	for _, r := range w.kafka.ReadAll(w.topics.DLQ) {
		testenv.WantRecordKind(t, r, "callbacks.dlq/1")
		h := map[string]string{}
		for _, kv := range r.Headers {
			h[kv.Key] = string(kv.Value)
		}
		if h["rostrum-error"] == "" || !strings.HasPrefix(h["rostrum-topic"], env+".callbacks.") || h["rostrum-offset"] == "" {
			t.Fatalf("DLQ record without reason or origin: headers %v", h)
		}
		if _, err := strconv.Atoi(h["rostrum-partition"]); err != nil {
			t.Fatalf("DLQ partition header %q", h["rostrum-partition"])
		}
		gotBad = append(gotBad, string(r.Value))
	}
	slices.Sort(wantBad)
	slices.Sort(gotBad)
	gotBad = slices.Compact(gotBad) // a redelivered bad record may reach the DLQ twice
	wantBad = slices.Compact(wantBad)
	if !slices.Equal(gotBad, wantBad) {
		t.Fatalf("DLQ has %d distinct records, want %d", len(gotBad), len(wantBad))
	}
	t.Logf("checked: %d trace records, %d rooms, %d output records, %d DLQ records", len(w.trace), len(rooms), len(recs), len(gotBad))
	return len(recs)
}

func e2eTrace(seed uint64, records int) trace.Config {
	c := trace.DefaultConfig(seed)
	c.Records = records
	c.Rooms = 40
	c.MaxMembers = 200
	return c
}

// TestEndToEnd runs the whole pipeline in process over a generated meeting
// trace and compares everything with the reference model.
func TestEndToEnd(t *testing.T) {
	w := newWorld(t, e2eTrace(1, 20000))
	w.waitProduced(w.produce(len(w.trace), 0))
	ctx, cancel := context.WithCancel(context.Background())
	// A small byte cap splits most polls into several batches.
	const maxBatchBytes = 16 << 10
	p, closeFn, err := startProcessorWith(ctx, w.kafka.Seeds, w.redis.Addr, t.TempDir(), 1000, func(c *processor.Config) {
		c.MaxBatchBytes = maxBatchBytes
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	w.waitCaughtUp(2 * time.Minute)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	closeFn()
	w.check()
	s := p.Stats()
	if s.Records.Load() != int64(len(w.trace)) {
		t.Fatalf("processed %d records, produced %d", s.Records.Load(), len(w.trace))
	}
	// Callbacks of unknown types are skipped and counted, not dead-lettered.
	ignored, shares, spots := 0, 0, 0
	for _, r := range w.trace {
		for _, e := range r.Events {
			switch e.Type {
			case codec.TypeIgnored:
				ignored++
			case codec.TypeScreenShare:
				shares++
			case codec.TypeSpotlight:
				spots++
			}
		}
	}
	if ignored == 0 || shares == 0 || spots == 0 || s.Ignored.Load() != int64(ignored) {
		t.Fatalf("ignored %d events, the trace holds %d of unknown types (and %d screen shares, %d spotlights)", s.Ignored.Load(), ignored, shares, spots)
	}
	t.Logf("batches %d, events %d, DLQ %d, published %d", s.Batches.Load(), s.Events.Load(), s.DLQ.Load(), s.Published.Load())
	size := 0
	for _, r := range w.trace {
		size += len(r.Key) + len(r.Value)
	}
	if least := int64(size / maxBatchBytes); s.Batches.Load() < least {
		t.Fatalf("%d batches for %d bytes, want at least %d with MaxBatchBytes %d", s.Batches.Load(), size, least, maxBatchBytes)
	}
}

// TestEndToEndHysteresis is TestEndToEnd with the default dwell and grace:
// once the timer has stepped every room whose dwell or grace was pending
// (the trace's event times are long past, so all of them are due), every
// room's last published set is the model's top-7 again.
//
// Then, with nothing pending anywhere, a challenger edges past the 7th
// member of a full room by one volume step (less than the margin): it waits
// its dwell, and only the timer can promote it.
func TestEndToEndHysteresis(t *testing.T) {
	w := newWorld(t, e2eTrace(5, 20000))
	w.waitProduced(w.produce(len(w.trace), 0))
	ctx, cancel := context.WithCancel(context.Background())
	p, closeFn, err := startProcessorWith(ctx, w.kafka.Seeds, w.redis.Addr, t.TempDir(), 1000, func(c *processor.Config) {
		c.Stable.Dwell, c.Stable.Grace, c.Stable.Margin = stability.DefaultDwell, stability.DefaultGrace, stability.DefaultMargin
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	w.waitCaughtUp(2 * time.Minute)
	waitNoDue(t, w.rc)
	stepped := p.Stats().DueSteps.Load()
	tail := w.tailChallenger()
	w.trace = append(w.trace, tail)
	if err := w.kafka.Client().ProduceSync(context.Background(), kafkaRecord(tail)).FirstErr(); err != nil {
		t.Fatal(err)
	}
	w.waitCaughtUp(2 * time.Minute)
	waitNoDue(t, w.rc)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	closeFn()
	w.check()
	if p.Stats().DueSteps.Load() == stepped {
		t.Fatalf("the challenger in room %s was not stepped by the timer", tail.Key)
	}
	t.Logf("published %d, rooms stepped by the timer %d", p.Stats().Published.Load(), p.Stats().DueSteps.Load())
}

// tailChallenger returns a record, after every record of the trace, of a
// new member who enters a full room's raw top-7 one volume step above its
// 7th member (a student or guest, not presenting), and applies it to the
// model.
func (w *world) tailChallenger() trace.Record {
	w.t.Helper()
	var newest int64
	for _, r := range w.trace {
		for _, e := range r.Events {
			newest = max(newest, e.TS)
		}
	}
	for _, room := range w.model.Rooms() {
		top := w.model.Top(room, 8)
		if len(top) < 8 {
			continue
		}
		m := top[6]
		if m.Audio != 1 || m.Volume >= codec.MaxVolume || m.Role == codec.RoleHost || m.ScreenShare == 1 || m.Spotlight == 1 {
			continue
		}
		ts := newest + 1
		evs := []codec.Event{
			{RoomID: room, UserID: "tail-challenger", Type: codec.TypeAudio, Value: 1, TS: ts, Source: codec.SourceRTC},
			{RoomID: room, UserID: "tail-challenger", Type: codec.TypeVolume, Value: int64(m.Volume) + 1, TS: ts, Source: codec.SourceRTC},
			{RoomID: room, UserID: "tail-challenger", Type: codec.TypeVideo, Value: int64(m.Video), TS: ts, Source: codec.SourceRTC},
			{RoomID: room, UserID: "tail-challenger", Type: codec.TypeRole, Value: int64(m.Role), TS: ts, Source: codec.SourceRTC},
		}
		var objs []string
		for _, e := range evs {
			w.model.Apply(e)
			v := strconv.FormatInt(e.Value, 10)
			if e.Type == codec.TypeRole {
				v = strconv.Quote(codec.Role(e.Value).String())
			}
			objs = append(objs, fmt.Sprintf(`{"room_id":%q,"user_id":%q,"type":%q,"value":%s,"ts":%d}`, e.RoomID, e.UserID, e.Type, v, e.TS))
		}
		return trace.Record{Topic: "rtc", Key: room, Value: []byte("[" + strings.Join(objs, ",") + "]"), Events: evs}
	}
	w.t.Fatal("no full room whose 7th member a challenger can edge past")
	return trace.Record{}
}

// child is a processor running as a separate process.
type child struct{ cmd *exec.Cmd }

func (w *world) startChild(walDir string, env ...string) *child {
	w.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), env...),
		"ROSTRUM_E2E_CHILD=1",
		"ROSTRUM_E2E_BROKERS="+strings.Join(w.kafka.Seeds, ","),
		"ROSTRUM_E2E_REDIS="+w.redis.Addr,
		"ROSTRUM_E2E_WAL="+walDir,
	)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	c := &child{cmd: cmd}
	w.t.Cleanup(func() { c.kill() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		w.t.Fatalf("processor child did not start: %q %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return c
}

func (c *child) kill() {
	if c.cmd.ProcessState == nil {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	}
}

func (c *child) stop(t *testing.T) {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("processor did not stop cleanly: %v", err)
	}
}

// TestCrashRestart SIGKILLs the processor at random moments while it works
// through the trace, restarts it each time, and then requires the same end
// state as an undisturbed run: nothing lost, nothing applied twice.
func TestCrashRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("crash loop skipped in -short mode")
	}
	w := newWorld(t, e2eTrace(2, 20000))
	produced := w.produce(500, 50*time.Millisecond)
	walDir := t.TempDir()
	r := rand.New(rand.NewPCG(2, 2))
	kills := 6
	for i := 0; i < kills; i++ {
		c := w.startChild(walDir)
		time.Sleep(time.Duration(300+r.IntN(900)) * time.Millisecond)
		c.kill()
	}
	c := w.startChild(walDir)
	w.waitProduced(produced)
	w.waitCaughtUp(3 * time.Minute)
	c.stop(t)
	w.check()
	t.Logf("survived %d SIGKILLs", kills)
}

// TestTwoProcessorsJoinLeave runs two processors in one group, killing and
// restarting one or the other, so partitions move between live members and
// a killed member's partitions are redelivered to the other.
func TestTwoProcessorsJoinLeave(t *testing.T) {
	if testing.Short() {
		t.Skip("group test skipped in -short mode")
	}
	for _, preload := range []bool{true, false} {
		t.Run(fmt.Sprintf("preload=%v", preload), func(t *testing.T) {
			w := newWorld(t, e2eTrace(3, 20000))
			var produced <-chan error
			if preload {
				w.waitProduced(w.produce(len(w.trace), 0))
			} else {
				produced = w.produce(500, 50*time.Millisecond)
			}
			dirs := [2]string{t.TempDir(), t.TempDir()} // one WAL per processor instance
			r := rand.New(rand.NewPCG(3, 3))
			procs := [2]*child{w.startChild(dirs[0]), w.startChild(dirs[1])}
			for i := 0; i < 6; i++ {
				time.Sleep(time.Duration(300+r.IntN(700)) * time.Millisecond)
				j := r.IntN(2)
				if i%2 == 0 {
					procs[j].kill()
				} else {
					procs[j].stop(t) // a clean leave
				}
				procs[j] = w.startChild(dirs[j])
			}
			if produced != nil {
				w.waitProduced(produced)
			}
			w.waitCaughtUp(3 * time.Minute)
			procs[0].stop(t)
			procs[1].stop(t)
			w.check()
		})
	}
}

// TestProcessorRules covers the processor's own rules on top of the decoder:
// the rooms routed to the environment and the score layout's time window.
func TestProcessorRules(t *testing.T) {
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t, testenv.WithTopics(1, topics.All()...))
	r := testenv.StartRedis(t)
	ts := time.Now().UnixMilli()
	good := fmt.Sprintf(`{"room_id":"test-r-1","user_id":"u-1","type":"audio","value":1,"ts":%d}`, ts)
	k.Produce(topics.RTC, []byte("test-r-1"), []byte(good))
	k.Produce(topics.RTC, []byte("prod-r-1"), []byte(fmt.Sprintf(`{"room_id":"prod-r-1","user_id":"u-1","type":"join","ts":%d}`, ts)))
	k.Produce(topics.Client, []byte("test-r-1"), []byte(`{"room_id":"test-r-1","user_id":"u-2","type":"join","ts":1600000000000}`))
	// A record redriven from the DLQ and rejected again: its DLQ copy keeps
	// rostrum-redriven-from and gets a fresh envelope, whatever other
	// headers the record came with.
	redriven := &kgo.Record{Topic: topics.Signal, Key: []byte("test-r-1"),
		Value: []byte(`{"room_id":"test-r-1","user_id":"u-3","type":"volume","value":1000,"ts":1}`),
		Headers: []kgo.RecordHeader{
			{Key: "rostrum-redriven-from", Value: []byte(topics.DLQ + "/0/7")},
			{Key: "rostrum-error", Value: []byte("an earlier reason")},
			{Key: "content-type", Value: []byte("text/plain")},
			{Key: "rostrum-schema", Value: []byte("callbacks.dlq/1")},
		}}
	if err := k.Client().ProduceSync(context.Background(), redriven).FirstErr(); err != nil {
		t.Fatal(err)
	}

	rc := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rc.Close()
	store, _ := sink.New(rc, sink.Config{Env: env, CacheMembers: sink.DefaultCacheMembers})
	log, err := wal.Open(t.TempDir(), wal.Config{Sync: wal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := processor.New(ctx, processor.Config{Brokers: k.Seeds, Env: env, Rooms: testRooms(t, env), KafkaOpts: testenv.FastGroupOpts()}, store, log)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	for p.Stats().Records.Load() < 4 {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	reasons := map[string]bool{}
	for _, rec := range k.ReadAll(topics.DLQ) {
		testenv.WantRecordKind(t, rec, "callbacks.dlq/1")
		h := testenv.RecordHeaders(rec)
		if len(h["rostrum-error"]) != 1 || len(h["rostrum-topic"]) != 1 || len(h["rostrum-partition"]) != 1 || len(h["rostrum-offset"]) != 1 {
			t.Fatalf("DLQ record headers %v, want the envelope once", h)
		}
		reasons[h["rostrum-error"][0]] = true
		switch h["rostrum-topic"][0] {
		case topics.Signal:
			if !slices.Equal(h["rostrum-redriven-from"], []string{topics.DLQ + "/0/7"}) || h["rostrum-offset"][0] != "0" {
				t.Fatalf("DLQ copy of a redriven record: headers %v", h)
			}
		case topics.RTC:
			testenv.WriteExampleRecord(t, "callbacks.dlq", rec)
		}
	}
	for _, want := range []string{
		`event[0].room_id: "prod-r-1" does not belong to environment test (routes test=^test-)`,
		`event[0].ts: 1600000000000 is before the score epoch 2025-01-01T00:00:00Z`,
		`value: volume must be 0..999, got 1000`,
	} {
		if !reasons[want] {
			t.Errorf("DLQ reason %q missing; have %v", want, reasons)
		}
	}
	top, _ := rc.ZRangeArgs(context.Background(), redis.ZRangeArgs{Key: sink.RoomKeys(env, "test-r-1").Ranking, Start: 0, Stop: -1, Rev: true}).Result()
	if !slices.Equal(top, []string{"u-1"}) {
		t.Fatalf("ranking %v, want [u-1]", top)
	}
	out := k.ReadAll(topics.TopN)
	if len(out) != 1 || !strings.Contains(string(out[0].Value), `"seq":1`) {
		t.Fatalf("outputs %d, want one with seq 1", len(out))
	}
	testenv.WantRecordKind(t, out[0], "ranking.topn/1")
	testenv.WriteExampleRecord(t, "ranking.topn", out[0])
}

// TestRedisLostMidStream restarts redis-server empty while the processor
// works through the trace. The processor must notice (generation marker),
// rebuild from the output topic and its WAL, and end in the model's state
// with an output topic whose seqs still have no gaps.
// TestRedisRolledBack covers Redis going back in time with its generation
// marker intact, as after a failover to a replica that missed writes or a
// restore from an older snapshot: midway the whole data set is replaced,
// atomically, by a copy taken earlier. The processor finds a room holding
// an older state token of its own (sink.ErrRedisRolledBack), rebuilds from
// its WAL and the output topic, and the result must equal the model: no
// lost update, and no seq published twice with different content.
func TestRedisRolledBack(t *testing.T) {
	w := newWorld(t, e2eTrace(4, 20000))
	var snap map[string][2]string
	p := w.runWithFaults(map[int64]func(){
		5000:  func() { snap = dumpAll(t, w.rc) },
		11000: func() { restoreAll(t, w.rc, snap) },
	})
	if n := p.Stats().RedisResets.Load(); n < 1 {
		t.Fatal("Redis went back in time but no rebuild ran")
	}
	w.check()
}

// runWithFaults produces the world's trace into one processor and runs
// each fault once the processor has consumed its number of records, in
// that order; it returns once the processor caught up and stopped.
func (w *world) runWithFaults(faults map[int64]func()) *processor.Processor {
	t := w.t
	t.Helper()
	produced := w.produce(500, 40*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, closeFn, err := startProcessor(ctx, w.kafka.Seeds, w.redis.Addr, t.TempDir(), 500)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	at := slices.Sorted(maps.Keys(faults))
	for _, n := range at {
		for p.Stats().Records.Load() < n {
			time.Sleep(20 * time.Millisecond)
		}
		faults[n]()
	}
	w.waitProduced(produced)
	w.waitCaughtUp(2 * time.Minute)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return p
}

// dumpAll takes a consistent snapshot of the whole data set, as a replica
// or an RDB file holds one: every key's DUMP and PTTL read by one script,
// so no write lands between two keys of a room (a key-by-key dump while the
// processor writes could pair one room's ranking with another moment's
// member states, a state Redis itself never holds).
func dumpAll(t *testing.T, rc *redis.Client) map[string][2]string {
	t.Helper()
	const snapshot = `
local out = {}
for _, k in ipairs(redis.call('KEYS', '*')) do
  out[#out + 1] = k
  out[#out + 1] = redis.call('DUMP', k)
  out[#out + 1] = redis.call('PTTL', k)
end
return out`
	vals, err := rc.Eval(context.Background(), snapshot, nil).Slice()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][2]string, len(vals)/3)
	for i := 0; i+2 < len(vals); i += 3 {
		out[vals[i].(string)] = [2]string{vals[i+1].(string), strconv.FormatInt(vals[i+2].(int64), 10)}
	}
	return out
}

// restoreAll replaces the whole data set by snap in one transaction.
func restoreAll(t *testing.T, rc *redis.Client, snap map[string][2]string) {
	t.Helper()
	ctx := context.Background()
	_, err := rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.FlushAll(ctx)
		for k, v := range snap {
			ttl, _ := strconv.ParseInt(v[1], 10, 64)
			p.RestoreReplace(ctx, k, time.Duration(max(ttl, 0))*time.Millisecond, v[0])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRedisLostMidStream(t *testing.T) {
	w := newWorld(t, e2eTrace(4, 20000))
	restart := func() { w.redis.Restart(false) }
	p := w.runWithFaults(map[int64]func(){6000: restart, 13000: restart})
	if n := p.Stats().RedisResets.Load(); n < 2 {
		t.Fatalf("Redis was emptied twice but %d rebuilds ran", n)
	}
	w.check()
}

// testRooms routes the rooms starting with test- to env.
func testRooms(t *testing.T, env string) *route.Table {
	t.Helper()
	rooms, err := route.New([]route.Rule{{Env: env, Pattern: `^test-`}}, "")
	if err != nil {
		t.Fatal(err)
	}
	return rooms
}

// TestRulesChangeBetweenRuns runs a processor under the legacy rules over
// the first half of a trace, then one under the default rules over the
// second half, on the same Redis. Every room touched by the second run is
// re-scored under the default rules whole (never two layouts in one
// ranking); every room equals the reference model of the rules it records.
func TestRulesChangeBetweenRuns(t *testing.T) {
	w := newWorld(t, e2eTrace(11, 8000))
	legacy, err := codec.NewMeetingRules(codec.DefaultEpoch, codec.LegacyRules())
	if err != nil {
		t.Fatal(err)
	}
	def := codec.NewMeeting(codec.DefaultEpoch)
	models := map[string]*model.Model{legacy.Version(): model.New(legacy), def.Version(): model.New(def)}
	for _, tr := range w.trace {
		for _, ev := range tr.Events {
			for _, m := range models {
				m.Apply(ev)
			}
		}
	}
	half := len(w.trace) / 2
	cl := w.kafka.Client()
	walDir := t.TempDir()
	touched := map[string]bool{}
	for run, part := range [][]trace.Record{w.trace[:half], w.trace[half:]} {
		recs := make([]*kgo.Record, len(part))
		for i, tr := range part {
			recs[i] = kafkaRecord(tr)
			if run == 1 && tr.Good() && len(tr.Events) > 0 && tr.Events[0].Type.Meeting() {
				touched[tr.Key] = true
			}
		}
		if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		meeting := legacy
		if run == 1 {
			meeting = def
		}
		ctx, cancel := context.WithCancel(context.Background())
		p, closeFn, err := startProcessorWith(ctx, w.kafka.Seeds, w.redis.Addr, walDir, 500, func(c *processor.Config) { c.Meeting = meeting })
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		w.waitCaughtUp(2 * time.Minute)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		closeFn()
	}
	ctx := context.Background()
	rescored := 0
	for _, room := range models[def.Version()].Rooms() {
		k := sink.RoomKeys(env, room)
		v := w.rc.HGet(ctx, k.Stable, "r").Val()
		m := models[v]
		if m == nil {
			t.Fatalf("room %s records rules version %q", room, v)
		}
		if touched[room] {
			if v != def.Version() {
				t.Fatalf("room %s was touched under the default rules but records %q", room, v)
			}
			rescored++
		}
		want := m.Ranking(room)
		got := w.rc.ZRevRangeWithScores(ctx, k.Ranking, 0, -1).Val()
		if len(got) != len(want) {
			t.Fatalf("room %s: %d ranked, model has %d", room, len(got), len(want))
		}
		for i := range want {
			if got[i].Member != want[i].UserID || got[i].Score != want[i].Score {
				t.Fatalf("room %s rank %d: Redis %v=%.0f, model (rules %s) %v=%.0f", room, i+1, got[i].Member, got[i].Score, v, want[i].UserID, want[i].Score)
			}
		}
	}
	if rescored == 0 {
		t.Fatal("no room was touched by the second run")
	}
	t.Logf("%d rooms, %d re-scored under the default rules", len(models[def.Version()].Rooms()), rescored)
}
