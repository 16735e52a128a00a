package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/control"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
)

// childArgsEnv holds the arguments (separated by \x1f) of a `rostrum`
// command that the test binary runs instead of its tests.
const childArgsEnv = "ROSTRUM_TEST_CHILD_ARGS"

// TestMain lets the test binary double as a `rostrum run` process, so that
// tests can run several of them and kill one.
func TestMain(m *testing.M) {
	if args := os.Getenv(childArgsEnv); args != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		err := Main(ctx, strings.Split(args, "\x1f"), os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const ctlToken = "control-test-token"

// ctlEnv is one Kafka, one Redis and a token file for `rostrum run`
// processes serving the control API.
type ctlEnv struct {
	t       *testing.T
	kafka   *testenv.Kafka
	redis   *testenv.Redis
	tokens  string
	topics  control.Topics
	client  *http.Client
	crashes int
}

// newCtlEnv starts the broker and a redis-server (with redisOpts).
func newCtlEnv(t *testing.T, redisOpts ...testenv.RedisOption) *ctlEnv {
	t.Helper()
	ct := control.TopicsFor("", "test")
	e := &ctlEnv{t: t, topics: ct}
	e.kafka = testenv.StartKafka(t)
	createTopics(t, e.kafka, "test")
	e.redis = testenv.StartRedis(t, redisOpts...)
	e.tokens = filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(e.tokens, []byte(ctlToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: time.Minute}
	return e
}

// runProc is a `rostrum run` child process.
type runProc struct {
	base   string // http://host:port
	cmd    *exec.Cmd
	out    *bytes.Buffer
	exited chan struct{}
}

// start runs `rostrum run` with the control API and extra flags; env are
// further environment variables ("K=V"). It returns once /healthz answers.
func (e *ctlEnv) start(env []string, extra ...string) *runProc {
	e.t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(e.t))
	args := append([]string{"run", "--brokers", e.kafka.Seeds[0], "--redis", e.redis.Addr, "--env", "test",
		"--wal-dir", e.t.TempDir(), "--http", addr, "--log-level", "warn", "--control-token-file", e.tokens}, extra...)
	p := &runProc{base: "http://" + addr, out: new(bytes.Buffer), exited: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(append(os.Environ(), childArgsEnv+"="+strings.Join(args, "\x1f")), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	e.t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := e.client.Get(p.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		select {
		case <-p.exited:
			e.t.Fatalf("rostrum run exited at start: %s", p.out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("rostrum run not serving after 30s: %s", p.out.String())
		}
	}
}

type ctlReply struct {
	status int
	body   []byte
	err    error
}

func (r ctlReply) state(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("answer %d %q: %v", r.status, r.body, err)
	}
	return m
}

func (e *ctlEnv) send(base, method, path, body string, headers ...string) ctlReply {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		return ctlReply{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+ctlToken)
	req.Header.Set("Content-Type", "application/json") // every write of the API needs it
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return ctlReply{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return ctlReply{status: resp.StatusCode, body: b, err: err}
}

func (e *ctlEnv) must(base, method, path, body string, headers ...string) ctlReply {
	e.t.Helper()
	r := e.send(base, method, path, body, headers...)
	if r.err != nil {
		e.t.Fatalf("%s %s: %v", method, path, r.err)
	}
	return r
}

type ctlCommand struct {
	RoomID      string `json:"room_id"`
	Action      string `json:"action"`
	RecordingID string `json:"recording_id"`
	Token       int64  `json:"token"`
	By          string `json:"by"`
}

func (e *ctlEnv) commands() []ctlCommand {
	e.t.Helper()
	var out []ctlCommand
	for _, rec := range e.kafka.ReadAll(e.topics.Commands) {
		var c ctlCommand
		if err := json.Unmarshal(rec.Value, &c); err != nil {
			e.t.Fatalf("command %q: %v", rec.Value, err)
		}
		out = append(out, c)
	}
	return out
}

// TestControlOneWinnerAcrossProcesses fires 200 concurrent starts, then
// 200 concurrent stops, at one room through three `rostrum run` processes,
// 50 times: each time exactly one request wins, every other is told the
// current state, tokens strictly increase, and the commands topic holds
// exactly the winners' commands. An Idempotency-Key retry, through another
// process, gets the first answer.
func TestControlOneWinnerAcrossProcesses(t *testing.T) {
	e := newCtlEnv(t)
	procs := []*runProc{e.start(nil), e.start(nil), e.start(nil)}
	const n, cycles = 200, 50
	var last int64
	var won []map[string]any
	for c := range cycles {
		for _, action := range []string{"start", "stop"} {
			replies := make([]ctlReply, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					body := fmt.Sprintf(`{"by":"u-%d","params":{"cycle":%d}}`, i, c)
					if action == "stop" {
						body = fmt.Sprintf(`{"by":"u-%d"}`, i)
					}
					replies[i] = e.send(procs[i%3].base, "POST", "/v1/rooms/r-1/recording/"+action, body)
				}()
			}
			wg.Wait()
			winners := 0
			for _, r := range replies {
				if r.err != nil {
					t.Fatalf("%s: %v", action, r.err)
				}
				switch r.status {
				case http.StatusCreated, http.StatusOK:
					winners++
					m := r.state(t)
					tok := int64(m["token"].(float64))
					if tok <= last {
						t.Fatalf("cycle %d %s: token %d not above the previous %d", c, action, tok, last)
					}
					last = tok
					won = append(won, m)
				case http.StatusConflict:
				default:
					t.Fatalf("cycle %d %s: %d %s", c, action, r.status, r.body)
				}
			}
			if winners != 1 {
				t.Fatalf("cycle %d %s: %d winners of %d, want exactly 1", c, action, winners, n)
			}
		}
	}

	// A retry of a won start, and of a lost one, through other processes.
	first := e.must(procs[0].base, "POST", "/v1/rooms/r-1/recording/start", `{"by":"u-a"}`, "Idempotency-Key", "k-won")
	lost := e.must(procs[1].base, "POST", "/v1/rooms/r-1/recording/start", `{"by":"u-b"}`, "Idempotency-Key", "k-lost")
	if first.status != http.StatusCreated || lost.status != http.StatusConflict {
		t.Fatalf("start: %d %s; second start: %d %s", first.status, first.body, lost.status, lost.body)
	}
	e.must(procs[2].base, "POST", "/v1/rooms/r-1/recording/stop", `{"by":"u-c"}`)
	for i, want := range []ctlReply{first, lost} {
		key := []string{"k-won", "k-lost"}[i]
		again := e.must(procs[2-i].base, "POST", "/v1/rooms/r-1/recording/start", `{"by":"u-a"}`, "Idempotency-Key", key)
		if again.status != want.status || !bytes.Equal(again.body, want.body) {
			t.Errorf("retry with Idempotency-Key %s: %d %s, first answer %d %s", key, again.status, again.body, want.status, want.body)
		}
	}

	cmds := e.commands()
	if len(cmds) != 2*cycles+2 {
		t.Fatalf("%d commands published, want %d", len(cmds), 2*cycles+2)
	}
	for i, w := range won {
		if cmds[i].Token != int64(w["token"].(float64)) || cmds[i].RecordingID != w["recording_id"] {
			t.Fatalf("command %d = %+v, winner %v", i, cmds[i], w)
		}
	}
	for i := 1; i < len(cmds); i++ {
		if cmds[i].Token <= cmds[i-1].Token {
			t.Fatalf("command %d token %d not above %d", i, cmds[i].Token, cmds[i-1].Token)
		}
	}
}

// waitCommands reads the commands topic until it holds n records.
func (e *ctlEnv) waitCommands(n int, poke func()) []ctlCommand {
	e.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if poke != nil {
			poke()
		}
		cmds := e.commands()
		if len(cmds) >= n {
			return cmds
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("commands topic holds %d records after a minute, want %d: %+v", len(cmds), n, cmds)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// crashAfterStep sends a write through a process that exits right after
// the write's Redis step (before its Kafka produce), and waits for it to
// die.
func (e *ctlEnv) crashAfterStep(path, body string, headers ...string) {
	e.t.Helper()
	e.crashAt("control-step", path, body, headers...)
}

// crashAt sends a write through a process that exits at fault (a value of
// faultEnv), and waits for it to die.
func (e *ctlEnv) crashAt(fault, path, body string, headers ...string) {
	e.t.Helper()
	// A group of its own: a member killed inside the others' group would
	// hold up their rebalances (and their clean stop) for a session timeout.
	e.crashes++
	p := e.start([]string{faultEnv + "=" + fault}, "--group", fmt.Sprintf("crash-%d", e.crashes), "--control-lease", "2s", "--control-produce-timeout", "1s", "--control-sweep-interval", "1h")
	if r := e.send(p.base, "POST", path, body, headers...); r.err == nil {
		e.t.Fatalf("the faulty process answered %d %s", r.status, r.body)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		e.t.Fatal("the faulty process did not exit")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 86 {
		e.t.Fatalf("the faulty process exited with %d, want the fault's 86: %s", code, p.out.String())
	}
}

// TestControlCrashBetweenRedisAndKafka kills a `rostrum run` process after
// a start's Redis step and before its Kafka produce, and shows that the
// start command is published afterwards, first by the next request for the
// room, then (for a crashed stop) by another instance's sweep, each with
// the token the step gave it, once, and with the state otherwise as the
// step left it; an Idempotency-Key retry of the lost answer gets it.
func TestControlCrashBetweenRedisAndKafka(t *testing.T) {
	e := newCtlEnv(t)
	// Serves requests; never sweeps, so only a request can publish.
	b := e.start(nil, "--control-lease", "2s", "--control-produce-timeout", "1s", "--control-sweep-interval", "1h")

	e.crashAfterStep("/v1/rooms/r-9/recording/start", `{"by":"u-1","params":{"tiles":4}}`, "Idempotency-Key", "lost-answer")
	if cmds := e.commands(); len(cmds) != 0 {
		t.Fatalf("a command was published before the crash was recovered: %+v", cmds)
	}
	st := e.must(b.base, "GET", "/v1/rooms/r-9/recording", "").state(t)
	if st["state"] != "recording" || st["started_by"] != "u-1" {
		t.Fatalf("state after the crashed start: %v", st)
	}
	// The next requests for the room publish the command once its writer's
	// lease has ended.
	cmds := e.waitCommands(1, func() { e.must(b.base, "GET", "/v1/rooms/r-9/recording", "") })
	after := e.must(b.base, "GET", "/v1/rooms/r-9/recording", "").state(t)
	c := cmds[0]
	if c.Action != "start" || c.RoomID != "r-9" || c.By != "u-1" || c.RecordingID != st["recording_id"] || float64(c.Token) != st["token"] {
		t.Fatalf("published %+v, state %v", c, st)
	}
	delete(after, "history")
	delete(st, "history")
	if fmt.Sprint(after) != fmt.Sprint(st) {
		t.Fatalf("state changed by the recovery: %v, was %v", after, st)
	}
	retry := e.must(b.base, "POST", "/v1/rooms/r-9/recording/start", `{"by":"u-1"}`, "Idempotency-Key", "lost-answer")
	if m := retry.state(t); retry.status != http.StatusCreated || m["token"] != st["token"] || m["recording_id"] != st["recording_id"] {
		t.Fatalf("retry of the lost answer: %d %s, state %v", retry.status, retry.body, st)
	}

	// A crashed stop, with no request for the room afterwards: a sweeping
	// instance publishes it.
	e.crashAfterStep("/v1/rooms/r-9/recording/stop", `{"by":"u-2"}`)
	e.start(nil, "--control-lease", "2s", "--control-produce-timeout", "1s", "--control-sweep-interval", "100ms")
	cmds = e.waitCommands(2, nil)
	st = e.must(b.base, "GET", "/v1/rooms/r-9/recording", "").state(t)
	c = cmds[1]
	if c.Action != "stop" || c.By != "u-2" || float64(c.Token) != st["token"] || st["state"] != "idle" || c.Token <= cmds[0].Token {
		t.Fatalf("published %+v, state %v", c, st)
	}
	// Nothing is published twice: more requests and sweeps add nothing.
	for range 5 {
		e.must(b.base, "GET", "/v1/rooms/r-9/recording", "")
		time.Sleep(200 * time.Millisecond)
	}
	if cmds := e.commands(); len(cmds) != 2 {
		t.Fatalf("commands after recovery: %+v, want the two", cmds)
	}
}

// TestControlCrashAfterPublish kills a `rostrum run` process after Kafka
// acknowledged a start's command and before the process deleted its outbox
// entry, then lets another instance sweep: the entry is dropped once its
// lease has ended, and the command is on the topic exactly once.
func TestControlCrashAfterPublish(t *testing.T) {
	e := newCtlEnv(t)
	e.crashAt("control-published", "/v1/rooms/r-8/recording/start", `{"by":"u-1"}`)
	cmds := e.commands()
	if len(cmds) != 1 || cmds[0].Action != "start" {
		t.Fatalf("commands after a crash that followed the acknowledgement: %+v, want the start", cmds)
	}
	rc := e.redis.Client()
	out := "rostrum:test:{r-8}:ctl:out"
	if n := rc.HLen(t.Context(), out).Val(); n != 2 {
		t.Fatalf("outbox of r-8 holds %d fields after the crash, want the entry and its lease", n)
	}
	b := e.start(nil, "--control-lease", "2s", "--control-produce-timeout", "1s", "--control-sweep-interval", "100ms")
	deadline := time.Now().Add(time.Minute)
	for rc.Exists(t.Context(), out, "rostrum:test:ctl:outbox").Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the outbox entry of the crashed start is still there after a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
	st := e.must(b.base, "GET", "/v1/rooms/r-8/recording", "").state(t)
	if cmds := e.commands(); len(cmds) != 1 || float64(cmds[0].Token) != st["token"] {
		t.Fatalf("commands after the recovery: %+v, want the start once; state %v", cmds, st)
	}
}

// TestControlTopics checks that `rostrum run` refuses to start without the
// control topics, and that --create-topics creates them, the layout topic
// compacted.
func TestControlTopics(t *testing.T) {
	topics := processor.TopicsFor("", "test")
	ct := control.TopicsFor("", "test")
	k := testenv.StartKafka(t, testenv.WithTopics(3, append(topics.Inputs(), topics.DLQ, topics.TopN)...))
	r := testenv.StartRedis(t)
	args := []string{"run", "--brokers", k.Seeds[0], "--redis", r.Addr, "--env", "test", "--wal-dir", t.TempDir(),
		"--http", fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)), "--log-level", "error", "--control-insecure"}
	err := Main(t.Context(), args, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), ct.Commands) || !strings.Contains(err.Error(), ct.Layout) {
		t.Fatalf("run without the control topics: %v, want an error naming both", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Main(ctx, append(args, "--create-topics"), io.Discard, io.Discard) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cfgs, err := k.Admin().DescribeTopicConfigs(t.Context(), ct.Layout, ct.Commands)
		if err == nil && cfgs[0].Err == nil && cfgs[1].Err == nil {
			policy := map[string]string{}
			for _, rc := range cfgs {
				for _, c := range rc.Configs {
					if c.Key == "cleanup.policy" {
						policy[rc.Name] = c.MaybeValue()
					}
				}
			}
			if policy[ct.Layout] != "compact" || policy[ct.Commands] == "compact" {
				t.Fatalf("cleanup.policy %v, want the layout topic compacted and the commands topic not", policy)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("control topics not created within 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run --create-topics: %v", err)
	}
}
