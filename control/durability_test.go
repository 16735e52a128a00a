package control

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// TestNoRegressionAfterRedisRestart acknowledges changes on a redis-server
// with an fsynced append-only file, kills it (SIGKILL) and restarts it, and
// checks that no acknowledged state is lost: the recording state and the
// layout are the last acknowledged ones, and new tokens and versions are
// above every acknowledged one.
func TestNoRegressionAfterRedisRestart(t *testing.T) {
	r := newRig(t, []testenv.RedisOption{testenv.WithArgs("--appendonly", "yes", "--appendfsync", "always")}, nil)
	var lastState map[string]any
	var maxToken float64
	var layoutVersion string
	for i := range 15 {
		action := []string{"start", "stop"}[i%2]
		p := r.do("POST", "/v1/rooms/r-7/recording/"+action, fmt.Sprintf(`{"by":"u-%d"}`, i))
		if p.Status != 201 && p.Status != 200 {
			t.Fatalf("%s: %d %s", action, p.Status, p.Body)
		}
		lastState = p.json(t)
		maxToken = lastState["token"].(float64)
		l := r.do("PUT", "/v1/rooms/r-7/layout", fmt.Sprintf(`{"step":%d}`, i))
		if l.Status != 200 {
			t.Fatalf("layout: %d %s", l.Status, l.Body)
		}
		layoutVersion = l.Header.Get("ETag")
	}
	r.redis.Kill()
	r.redis.Restart(true) // comes back from its append-only file

	st := r.do("GET", "/v1/rooms/r-7/recording", "").json(t)
	delete(st, "history")
	if fmt.Sprint(st) != fmt.Sprint(lastState) {
		t.Fatalf("state after restart %v, last acknowledged %v", st, lastState)
	}
	if l := r.do("GET", "/v1/rooms/r-7/layout", ""); l.Header.Get("ETag") != layoutVersion || string(l.Body) != "{\"step\":14}\n" {
		t.Fatalf("layout after restart %s %s, last acknowledged %s", l.Header.Get("ETag"), l.Body, layoutVersion)
	}
	p := r.do("POST", "/v1/rooms/r-7/recording/stop", `{"by":"u-x"}`)
	if p.Status != 200 || p.json(t)["token"].(float64) <= maxToken {
		t.Fatalf("stop after restart: %d %s, tokens so far up to %v", p.Status, p.Body, maxToken)
	}
}

// TestOutboxSweep abandons writes between their Redis step and their
// produce, as a crash would, and checks that Sweep publishes each record
// once its lease has ended, with the bytes the step wrote, and leaves the
// outbox and its index empty.
func TestOutboxSweep(t *testing.T) {
	crash := true
	r := newRig(t, nil, func(o *Config) {
		o.Lease, o.ProduceTimeout = 2*time.Second, time.Second
		o.Fault = func(string) error {
			if crash {
				return errCrash
			}
			return nil
		}
	})
	if p := r.do("POST", "/v1/rooms/r-a/recording/start", `{"by":"u-1"}`); p.Status != 503 {
		t.Fatalf("crashed start answered %d %s", p.Status, p.Body)
	}
	if p := r.do("PUT", "/v1/rooms/r-b/layout", `{"tiles":4}`); p.Status != 503 {
		t.Fatalf("crashed layout put answered %d %s", p.Status, p.Body)
	}
	crash = false
	if n := len(r.kafka.ReadAll(commandTopic)) + len(r.kafka.ReadAll(layoutTopic)); n != 0 {
		t.Fatalf("%d records published by crashed writes", n)
	}
	st := r.do("GET", "/v1/rooms/r-a/recording", "").json(t)
	published := 0
	deadline := time.Now().Add(30 * time.Second)
	for published < 2 {
		n, err := r.svc.Sweep(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		published += n
		if time.Now().After(deadline) {
			t.Fatalf("sweep published %d of 2 records within 30s", published)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmds := r.commands()
	if len(cmds) != 1 || float64(cmds[0].Token) != st["token"] || cmds[0].RecordingID != st["recording_id"] || cmds[0].Action != "start" {
		t.Fatalf("commands %+v, state %v", cmds, st)
	}
	if l := r.kafka.ReadAll(layoutTopic); len(l) != 1 || string(l[0].Value) != `{"room_id":"r-b","version":1,"at":`+fmt.Sprint(r.layoutAt("r-b"))+`,"persist":false,"layout":{"tiles":4}}` {
		t.Fatalf("layout records %v", l)
	}
	testenv.WantRecordKind(t, r.kafka.ReadAll(layoutTopic)[0], "rooms.layout/1") // a recovered record gets its writer's headers
	for _, room := range []string{"r-a", "r-b"} {
		if n := r.rc.Exists(t.Context(), roomKeys(testEnv, room).Out).Val(); n != 0 {
			t.Errorf("outbox of %s not empty", room)
		}
	}
	if n := r.rc.ZCard(t.Context(), outboxIndex(testEnv)).Val(); n != 0 {
		t.Errorf("outbox index holds %d members after the sweep", n)
	}
	if n, _ := r.svc.Sweep(t.Context()); n != 0 {
		t.Errorf("a second sweep published %d records", n)
	}
}

func (r *rig) layoutAt(room string) string {
	return r.rc.HGet(r.t.Context(), roomKeys(testEnv, room).Lay, "at").Val()
}

// TestReplicasConfirm checks --control-replicas: with a replica attached a
// change waits for it and is answered; asking for more replicas than exist
// answers 503 and publishes nothing (the outbox keeps the change).
func TestReplicasConfirm(t *testing.T) {
	r := newRig(t, nil, func(o *Config) { o.Replicas = 1 })
	host, port, _ := strings.Cut(r.redis.Addr, ":")
	replica := testenv.StartRedis(t, testenv.WithArgs("--replicaof", host, port, "--repl-diskless-sync-delay", "0"))
	rc := replica.Client()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(rc.Info(t.Context(), "replication").Val(), "master_link_status:up") {
		if time.Now().After(deadline) {
			t.Fatal("replica not in sync after 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if p := r.do("POST", "/v1/rooms/r-r/recording/start", `{"by":"u-1"}`); p.Status != 201 {
		t.Fatalf("start with one replica: %d %s", p.Status, p.Body)
	}
	if v := rc.HGet(t.Context(), roomKeys(testEnv, "r-r").Rec, "state").Val(); v != "recording" {
		t.Fatalf("replica holds state %q after the answer", v)
	}

	two, err := New(r.rc, r.pr, Config{Env: testEnv, CommandsTopic: commandTopic, LayoutTopic: layoutTopic,
		Replicas: 2, ReplicaTimeout: 100 * time.Millisecond, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := two.Stop(t.Context(), "r-r", "u-2", "", ""); !errors.Is(err, ErrUnconfirmed) {
		t.Fatalf("stop waiting for two replicas: %v, want ErrUnconfirmed", err)
	}
	if n := len(r.commands()); n != 1 {
		t.Fatalf("%d commands published, want only the confirmed start", n)
	}
}

// TestOutboxPublishedOnce abandons writes at the step between Kafka's
// acknowledgement and the deletion of their outbox entry, as a writer dying
// there would, and puts back an entry whose deletion a Redis restart lost.
// Once the leases end the recovery finds each record on its topic and
// deletes the entry without publishing it again: every record is on its
// topic exactly once, and the outbox and its index end empty.
func TestOutboxPublishedOnce(t *testing.T) {
	crash := true
	r := newRig(t, nil, func(o *Config) {
		o.Lease, o.ProduceTimeout = 2*time.Second, time.Second
		o.Fault = func(point string) error {
			if crash && point == "published" {
				return errCrash
			}
			return nil
		}
	})
	if p := r.do("POST", "/v1/rooms/r-a/recording/start", `{"by":"u-1"}`); p.Status != 503 {
		t.Fatalf("start abandoned after its produce answered %d %s", p.Status, p.Body)
	}
	if p := r.do("PUT", "/v1/rooms/r-b/layout", `{"tiles":4}`); p.Status != 503 {
		t.Fatalf("layout put abandoned after its produce answered %d %s", p.Status, p.Body)
	}
	crash = false
	if n := len(r.kafka.ReadAll(commandTopic)) + len(r.kafka.ReadAll(layoutTopic)); n != 2 {
		t.Fatalf("%d records on the topics after two acknowledged produces, want 2", n)
	}
	for _, room := range []string{"r-a", "r-b"} {
		if n := r.rc.HLen(t.Context(), roomKeys(testEnv, room).Out).Val(); n != 2 {
			t.Fatalf("outbox of %s holds %d fields after an abandoned write, want its entry and lease", room, n)
		}
	}
	r.sweepUntilEmpty("r-a", "r-b")

	// A stop whose entry a Redis restart brought back (its deletion was
	// not yet in the append-only file): same field, an ended lease.
	stop := r.do("POST", "/v1/rooms/r-a/recording/stop", `{"by":"u-2"}`)
	if stop.Status != 200 {
		t.Fatalf("stop: %d %s", stop.Status, stop.Body)
	}
	recs := r.kafka.ReadAll(commandTopic)
	last := recs[len(recs)-1]
	field := fmt.Sprintf("c:%.0f", stop.json(t)["token"].(float64))
	ctx := t.Context()
	r.rc.HSet(ctx, roomKeys(testEnv, "r-a").Out, field, string(last.Value), "l:"+field, "0")
	r.rc.ZAdd(ctx, outboxIndex(testEnv), redis.Z{Score: 0, Member: "r-a\nrestored"})
	r.sweepUntilEmpty("r-a")

	st := r.do("GET", "/v1/rooms/r-a/recording", "").json(t)
	cmds := r.commands()
	if len(cmds) != 2 || cmds[0].Action != "start" || cmds[1].Action != "stop" ||
		float64(cmds[1].Token) != st["token"] || cmds[0].RecordingID != st["recording_id"] {
		t.Fatalf("commands %+v, want the start and the stop once each; state %v", cmds, st)
	}
	if l := r.kafka.ReadAll(layoutTopic); len(l) != 1 {
		t.Fatalf("%d layout records, want 1", len(l))
	}
	if n, _ := r.svc.Sweep(ctx); n != 0 {
		t.Errorf("a last sweep published %d records", n)
	}
}

// sweepUntilEmpty sweeps until the rooms' outboxes and the outbox index are
// empty, and fails the test if a sweep publishes anything: every entry left
// is one whose record is already on its topic.
func (r *rig) sweepUntilEmpty(rooms ...string) {
	r.t.Helper()
	ctx := r.t.Context()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := r.svc.Sweep(ctx)
		if err != nil {
			r.t.Fatal(err)
		}
		if n != 0 {
			r.t.Fatalf("a sweep published %d records already on their topic", n)
		}
		left := r.rc.ZCard(ctx, outboxIndex(testEnv)).Val()
		for _, room := range rooms {
			left += r.rc.Exists(ctx, roomKeys(testEnv, room).Out).Val()
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("outbox not empty 30s after the writes")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPublishNeedsLeaseLeft checks that a publisher with less than
// ProduceTimeout and the landing time left of its lease produces nothing:
// its record could land after a recovery looked for it and published it.
func TestPublishNeedsLeaseLeft(t *testing.T) {
	r := newRig(t, nil, func(o *Config) { o.Lease, o.ProduceTimeout = 3*time.Second, time.Second })
	// 1.5s left: more than the produce timeout, less than it plus the
	// landing time (1s).
	err := r.svc.publish(t.Context(), time.Now().Add(-1500*time.Millisecond), entry{}, commandTopic, "r-l", `{"room_id":"r-l"}`)
	if !errors.Is(err, errLeaseEnding) {
		t.Fatalf("publish with 1.5s of a 3s lease left: %v, want errLeaseEnding", err)
	}
	if err := r.svc.publish(t.Context(), time.Now(), entry{}, commandTopic, "r-l", `{"room_id":"r-l"}`); err != nil {
		t.Fatalf("publish with the whole lease left: %v", err)
	}
	if n := len(r.kafka.ReadAll(commandTopic)); n != 1 {
		t.Fatalf("%d records on the topic, want only the one published within its lease", n)
	}
}

// TestLeaseHeldWhileProduceUnanswered: the brokers hold a start's produce
// request unanswered for longer than the outbox lease, then append it. The
// writer answers 503 after its produce timeout but keeps the entry's lease
// while the produce is unresolved, so a sweep after the lease would have
// ended finds the entry still leased and publishes nothing; once the record
// has landed, the sweep finds it on the topic and drops the entry. The
// command is on its topic once (without the hold, the sweep publishes it
// and the held request lands after it: twice).
func TestLeaseHeldWhileProduceUnanswered(t *testing.T) {
	r := newRig(t, nil, func(o *Config) { o.Lease, o.ProduceTimeout = 3*time.Second, time.Second })
	fake := r.kafka.Fake()
	release := make(chan struct{})
	var held atomic.Int32
	fake.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		if held.Add(1) == 1 {
			fake.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	if p := r.do("POST", "/v1/rooms/r-h/recording/start", `{"by":"u-1"}`); p.Status != 503 {
		t.Fatalf("start whose produce is unanswered: %d %s, want 503", p.Status, p.Body)
	}
	time.Sleep(3500 * time.Millisecond) // past the lease the step took
	if n, err := r.svc.Sweep(t.Context()); err != nil || n != 0 {
		t.Fatalf("sweep while the produce is unanswered published %d (%v), want 0: the lease is held", n, err)
	}
	close(release)
	deadline := time.Now().Add(30 * time.Second)
	for len(r.kafka.ReadAll(commandTopic)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the held record never landed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.sweepUntilEmpty("r-h")
	if n := len(r.kafka.ReadAll(commandTopic)); n != 1 {
		t.Fatalf("%d start records on the topic, want 1", n)
	}
	if held.Load() == 0 {
		t.Fatal("no produce reached the broker")
	}
}
