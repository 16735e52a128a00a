package control

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/internal/testenv"
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
	r := newRig(t, nil, func(o *Options) {
		o.Lease, o.ProduceTimeout = 1500*time.Millisecond, time.Second
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
	r := newRig(t, nil, func(o *Options) { o.Replicas = 1 })
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

	two, err := New(r.rc, r.pr, Options{Env: testEnv, CommandsTopic: commandTopic, LayoutTopic: layoutTopic,
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
