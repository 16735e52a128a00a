package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/chaos"
	"github.com/rostrumhq/rostrum/internal/testkit/model"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/internal/testkit/trace"
	"github.com/rostrumhq/rostrum/processor"
)

// crashProc is a `rostrum run` child process of the crash-loop test.
type crashProc struct {
	cmd    *exec.Cmd
	out    *bytes.Buffer
	exited chan struct{}
}

// startCrashProc runs `rostrum run` with args and returns at once, as a
// supervisor restarting a crashed container does: the process may be killed
// before it has joined its group.
func startCrashProc(t *testing.T, args []string) *crashProc {
	t.Helper()
	p := &crashProc{out: new(bytes.Buffer), exited: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(append([]string{"run"}, args...), "\x1f"))
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

func (p *crashProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// term sends SIGTERM and returns how long the process took to exit, or
// false when it had not exited after limit (it is then killed).
func (p *crashProc) term(limit time.Duration) (time.Duration, bool) {
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return time.Since(start), true
	case <-time.After(limit):
		p.kill()
		return time.Since(start), false
	}
}

// TestCrashLoopRecovers reproduces a crash-looping pod (docs/DESIGN.md
// §3.9), with dynamic group membership and with static membership
// (--instance-id, as the StatefulSet runs it): half of a trace of 30 rooms
// is in the input topics before the first start, and `rostrum run` is
// SIGKILLed 1.5 s, 2.5 s and 3.5 s after each start (during its first
// joins) and restarted at once on the same WAL directory. Then:
//
//   - a second instance (its own WAL directory), started at once, joins a
//     group that waits for the member the last kill left behind, and is
//     stopped with SIGTERM while it waits: it must exit within
//     --shutdown-timeout + 2 s;
//   - the crashed instance restarts once more, the rest of the trace
//     arrives, and the group must consume it all: Redis, the output topic
//     and the DLQ end equal to the model of the trace (internal/testkit/chaos
//     Check), and the last SIGTERM too must return within
//     --shutdown-timeout + 2 s.
//
// No process may need the last-resort exit of a stop that overran. The
// recovery (from the last start until every record is committed) is
// logged. For measurements (docs/RELIABILITY.md "Crash loops"):
// ROSTRUM_CRASHLOOP_ARGS adds flags (e.g. the default group timeouts),
// ROSTRUM_CRASHLOOP_KILLS sets the kill delays (comma-separated durations),
// ROSTRUM_CRASHLOOP_FRESH_WAL=1 starts every process on a new WAL
// directory (no eviction of the dead member: the timeouts decide), and
// ROSTRUM_CRASHLOOP_LOGS=1 logs every process's output.
func TestCrashLoopRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("crash loop skipped in -short mode")
	}
	t.Run("dynamic", func(t *testing.T) { crashLoop(t, false) })
	t.Run("static", func(t *testing.T) { crashLoop(t, true) })
}

func crashLoop(t *testing.T, static bool) {
	const env = "test"
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t)
	createTopics(t, k, env)
	r := testenv.StartRedis(t)

	tr := trace.Generate(trace.Config{Seed: 11, Rooms: 30, MaxMembers: 30, Records: 600,
		ArrayRate: 0.35, DupRate: 0.03, BadRate: 0.02, ReorderRate: 0.05, UnknownRate: 0.02})
	cl := k.Client()
	produce := func(part []trace.Record) {
		recs := make([]*kgo.Record, len(part))
		for i, x := range part {
			recs[i] = &kgo.Record{Topic: env + ".callbacks." + x.Topic, Key: []byte(x.Key), Value: x.Value}
		}
		if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Half of the trace waits before the first start, the other half
	// arrives once the crashes are over: the group must be back to
	// consume it.
	produce(tr[:len(tr)/2])

	// Group timeouts short enough for a test (the documented knobs);
	// nothing below waits for them while dead members are evicted.
	const shutdown = 3 * time.Second
	args := []string{"--brokers", k.Seeds[0], "--redis", r.Addr, "--env", env,
		"--http", "", "--create-topics", "--shutdown-timeout", shutdown.String(),
		"--kafka-session-timeout", "3s", "--kafka-rebalance-timeout", "6s"}
	args = append(args, strings.Fields(os.Getenv("ROSTRUM_CRASHLOOP_ARGS"))...)
	kills := []time.Duration{1500 * time.Millisecond, 2500 * time.Millisecond, 3500 * time.Millisecond}
	if v := os.Getenv("ROSTRUM_CRASHLOOP_KILLS"); v != "" {
		kills = nil
		for _, f := range strings.Split(v, ",") {
			d, err := time.ParseDuration(f)
			if err != nil {
				t.Fatalf("ROSTRUM_CRASHLOOP_KILLS: %v", err)
			}
			kills = append(kills, d)
		}
	}
	fresh := os.Getenv("ROSTRUM_CRASHLOOP_FRESH_WAL") == "1"
	walA, walB := t.TempDir(), t.TempDir()
	var logs []*crashProc
	start := func(wal, instance string) *crashProc {
		if fresh && wal == walA {
			wal = t.TempDir()
		}
		a := append([]string{"--wal-dir", wal}, args...)
		if static {
			a = append(a, "--instance-id", instance)
		}
		p := startCrashProc(t, a)
		logs = append(logs, p)
		return p
	}
	defer func() {
		if t.Failed() || os.Getenv("ROSTRUM_CRASHLOOP_LOGS") == "1" {
			for i, p := range logs {
				t.Logf("process %d:\n%s", i+1, p.out.String())
			}
		}
	}()
	began := time.Now()
	for _, d := range kills {
		p := start(walA, "rostrum-0")
		time.Sleep(d)
		p.kill()
	}
	bound := shutdown + 2*time.Second
	p := start(walB, "rostrum-1")
	time.Sleep(time.Second)
	took, ok := p.term(bound + 10*time.Second)
	if !ok || took > bound {
		t.Errorf("SIGTERM while joining: exited after %s (exited: %v), want within %s", took.Round(time.Millisecond), ok, bound)
	}
	t.Logf("SIGTERM while joining: exited after %s", took.Round(time.Millisecond))
	last := start(walA, "rostrum-0")
	restarted := time.Now()
	produce(tr[len(tr)/2:])
	k.WaitCaughtUp(t, "rostrum-"+env, 9, 3*time.Minute, "")
	t.Logf("%d kills: caught up %s after the last start, %s after the first", len(kills),
		time.Since(restarted).Round(100*time.Millisecond), time.Since(began).Round(100*time.Millisecond))
	rc := chaos.RedisClient([]string{r.Addr})
	defer rc.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := rc.ZCard(context.Background(), "rostrum:"+env+":due").Result()
		if err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rooms still due after a minute (%v)", n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	took, ok = last.term(bound + 10*time.Second)
	if !ok || took > bound {
		t.Errorf("last SIGTERM: exited after %s (exited: %v), want within %s", took.Round(time.Millisecond), ok, bound)
	}
	t.Logf("last SIGTERM: exited after %s", took.Round(time.Millisecond))
	for i, p := range logs {
		if strings.Contains(p.out.String(), "stop did not finish") {
			t.Errorf("process %d needed the last-resort exit", i+1)
		}
	}

	var inputs []*kgo.Record
	for _, topic := range topics.Inputs() {
		inputs = append(inputs, k.ReadAll(topic)...)
	}
	in := chaos.NewInput(env, 7, tr, model.New(codec.NewMeeting(codec.DefaultEpoch)))
	rep, err := chaos.Check(context.Background(), rc, k.ReadAll(topics.TopN), k.ReadAll(topics.DLQ), nil, inputs, in)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("model: %d rooms, %d members; outputs %d in %d rooms; DLQ %d", rep.Rooms, rep.Members, rep.Outputs, rep.OutputRooms, rep.DLQ)
	if !rep.OK() {
		t.Fatalf("state differs from the model: lost %d, applied twice %d, moved %d, mismatch %d: %v",
			rep.Lost, rep.AppliedTwice, rep.Moved, rep.Mismatch, rep.Problems)
	}
}
