package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/internal/testkit/chaos"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/internal/testkit/trace"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
)

// TestSentinelFlagsRefused checks that every wrong combination of --redis
// and the Sentinel flags stops start-up with an error naming the flags,
// wherever --redis was given (command line, environment, config file), and
// that --redis's default does not count as given.
func TestSentinelFlagsRefused(t *testing.T) {
	const exclusive = "--redis and --redis-sentinel-master/--redis-sentinels are exclusive"
	sentinel := []string{"--redis-sentinel-master", "mymaster", "--redis-sentinels", "127.0.0.1:1,127.0.0.1:2"}
	pass := testenv.WriteFile(t, "sentinel-pass", "s3cret-sentinel\n", 0o600)
	cfg := testenv.WriteFile(t, "rostrum.yaml", "redis: 10.0.0.1:6379\n", 0o600)
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"--redis on the command line", append([]string{"--redis", "127.0.0.1:6379"}, sentinel...), nil, exclusive},
		{"--redis in the environment", sentinel, map[string]string{"ROSTRUM_REDIS": "127.0.0.1:6379"}, exclusive},
		{"--redis in the config file", append([]string{"--config", cfg}, sentinel...), nil, exclusive},
		{"Sentinel flags in the environment", []string{"--redis", "127.0.0.1:6379"},
			map[string]string{"ROSTRUM_REDIS_SENTINEL_MASTER": "mymaster", "ROSTRUM_REDIS_SENTINELS": "127.0.0.1:1"}, exclusive},
		{"no master", []string{"--redis-sentinels", "127.0.0.1:1"}, nil, "--redis-sentinel-master is required with --redis-sentinels"},
		{"no Sentinels", []string{"--redis-sentinel-master", "mymaster"}, nil, "--redis-sentinels is required with --redis-sentinel-master"},
		{"a Sentinel without port", []string{"--redis-sentinel-master", "mymaster", "--redis-sentinels", "127.0.0.1:1,sentinel-2"}, nil,
			`--redis-sentinels: "sentinel-2" is not host:port`},
		{"a Sentinel password without Sentinels", []string{"--redis-sentinel-password-file", pass}, nil,
			"--redis-sentinel-user and --redis-sentinel-password need --redis-sentinel-master and --redis-sentinels"},
		{"a Sentinel user without password", append([]string{"--redis-sentinel-user", "rostrum"}, sentinel...), nil,
			`--redis-sentinel-user "rostrum" needs --redis-sentinel-password or --redis-sentinel-password-file`},
		{"a Sentinel password twice", append([]string{"--redis-sentinel-password", "x", "--redis-sentinel-password-file", pass}, sentinel...), nil,
			"--redis-sentinel-password and --redis-sentinel-password-file are exclusive"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			for _, cmd := range []string{"run", "wal replay"} { // and rostrum-dev bench: its TestBenchSentinelFlagsRefused
				args := append(strings.Fields(cmd), c.args...)
				args = append(args, "--wal-dir", t.TempDir())
				err := Main(context.Background(), args, io.Discard, io.Discard)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("%s: error %v, want one containing %q", cmd, err, c.want)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("%s: the error shows the password: %v", cmd, err)
				}
			}
		})
	}
}

// TestCheckThroughSentinel runs `rostrum check` against a Sentinel-managed
// master whose Sentinels want a password (read from a file): it names the
// master the Sentinels agree on, reaches it, and loads the scripts there. A
// wrong Sentinel password fails the Redis check (exit status 6) with a
// message naming the Sentinel flags and without the password; a Sentinel
// that does not answer is reported while the others do.
func TestCheckThroughSentinel(t *testing.T) {
	k := testenv.StartKafka(t)
	createTopics(t, k, "test")
	s := testenv.StartRedisSentinel(t, testenv.WithSentinelAuth("", "sentinel-secret"))
	master := s.MasterAddr()
	pass := testenv.WriteFile(t, "sentinel-pass", "sentinel-secret\n", 0o600)
	args := []string{"--brokers", k.Seeds[0], "--env", "test", "--redis-sentinel-master", s.Name,
		"--redis-sentinels", strings.Join(s.SentinelAddrs, ","), "--redis-sentinel-password-file", pass}
	out, code := check(t, args...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	target := "redis master " + s.Name + " (Sentinels " + strings.Join(s.SentinelAddrs, ",") + ")"
	for _, want := range []string{
		"ok    redis sentinels: 3 of 3 answered, master " + s.Name + " at " + master + "\n",
		"ok    " + target + ": answered, default user, Sentinels with a password, no TLS\n",
		"ok    redis scripts: the ranking scripts loaded\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n, err := s.Master().Client().ScriptExists(context.Background(), "0000000000000000000000000000000000000000").Result(); err != nil || len(n) != 1 {
		t.Fatalf("SCRIPT EXISTS on the master: %v %v", n, err)
	}

	// One Sentinel that does not answer is reported, not failed.
	dead := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	out, code = check(t, append(args[:len(args)-4:len(args)-4], "--redis-sentinels", dead+","+strings.Join(s.SentinelAddrs, ","),
		"--redis-sentinel-password-file", pass)...)
	if code != 0 || !strings.Contains(out, "ok    redis sentinels: 3 of 4 answered") || !strings.Contains(out, "not answering: "+dead) {
		t.Fatalf("with one dead Sentinel: exit %d:\n%s", code, out)
	}

	wrong := testenv.WriteFile(t, "wrong-pass", "not-the-sentinel-secret\n", 0o600)
	out, code = check(t, append(args[:len(args)-1:len(args)-1], wrong)...)
	if code != exitRedis {
		t.Fatalf("wrong Sentinel password: exit %d, want %d:\n%s", code, exitRedis, out)
	}
	if !strings.Contains(out, "FAIL  redis sentinels: "+target+": no Sentinel answered (check --redis-sentinels, --redis-sentinel-user and --redis-sentinel-password)") ||
		strings.Contains(out, "not-the-sentinel-secret") {
		t.Fatalf("wrong Sentinel password:\n%s", out)
	}
}

// TestRunThroughSentinelFailovers runs `rostrum run` (its flags, its
// client, its pipeline) against a Sentinel-managed master while a generated
// meeting trace streams in from kfake, and fails the master over twice in
// the middle of it:
//
//  1. a clean SENTINEL FAILOVER: the replica is promoted while the old
//     master, up, still takes the writes that reach it before the client
//     learns of the switch (lost when it becomes a replica);
//  2. a kill of the master (SIGKILL) after its only replica was cut off
//     while the processor kept writing: the Sentinels promote a replica
//     that lags, with the generation marker intact. The state tokens must
//     tell (sink.ErrRedisRolledBack, docs/DESIGN.md §16.6) and the
//     processor rebuild from its WAL and the output topic.
//
// At the end Redis, the output topic and the DLQ must equal the reference
// model (internal/testkit/chaos.Check): nothing lost, nothing applied twice.
func TestRunThroughSentinelFailovers(t *testing.T) {
	if testing.Short() {
		t.Skip("Sentinel failover test skipped in -short mode")
	}
	s := testenv.StartRedisSentinel(t, testenv.WithSentinelAuth("", "sentinel-secret"))
	tc := trace.DefaultConfig(21)
	tc.Records = 12000
	h := chaos.New(t, nil, trace.Generate(tc), nil, processor.StabilityHysteresis)
	pass := testenv.WriteFile(t, "sentinel-pass", "sentinel-secret\n", 0o600)

	fs := cli.NewFlagSet("run", flag.ContinueOnError)
	var f runFlags
	f.register(fs)
	if err := parseFlags(fs, &f, []string{"--brokers", h.Kafka.Seeds[0], "--env", chaos.EnvName,
		"--redis-sentinel-master", s.Name, "--redis-sentinels", strings.Join(s.SentinelAddrs, ","),
		"--redis-sentinel-password-file", pass, "--wal-dir", t.TempDir(), "--http", "",
		// chaos.New created the output topic without compaction.
		"--max-poll-records", "500", "--create-topics", "--allow-uncompacted-output"}); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	lg := zap.New(zapcore.NewTee(zaptest.NewLogger(t, zaptest.Level(zapcore.WarnLevel)).Core(), core))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan *processor.Processor, 1)
	done := make(chan error, 1)
	go func() { done <- runProcessor(ctx, &f, lg, func(p *processor.Processor) { started <- p }) }()
	var p *processor.Processor
	select {
	case p = <-started:
	case err := <-done:
		t.Fatalf("run stopped at start: %v", err)
	}
	records := func() int64 { return p.Stats().Records.Load() }
	waitRecords := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for records() < n {
			if time.Now().After(deadline) {
				t.Fatalf("processed %d records, want %d within 2 minutes", records(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// recovered waits until the processor completes a batch after the new
	// master was named, and returns how long after begin that was.
	recovered := func(begin time.Time) time.Duration {
		t.Helper()
		waitRecords(records() + 1)
		return time.Since(begin)
	}

	n := len(h.In.Trace)
	produced := h.Produce(0, n/3, 6*time.Second)

	// 1. A clean failover while the first third streams in.
	waitRecords(int64(n / 6))
	resets, retries := p.Stats().RedisResets.Load(), p.Stats().Retries.Load()
	begin := time.Now()
	first := s.Master()
	second := s.Failover()
	named := time.Now()
	took := recovered(begin)
	t.Logf("clean failover %s → %s: Sentinels agreed after %s, a batch completed after %s",
		first.Addr, second.Addr, named.Sub(begin).Round(time.Millisecond), took.Round(time.Millisecond))

	if err := <-produced; err != nil {
		t.Fatal(err)
	}

	// 2. The old master becomes the replica (the Sentinels turn it into
	// one some seconds later); cut it off, let the processor write the
	// rest of the trace to the master alone for a while, then kill the
	// master.
	s.WaitReplicasSynced()
	s.StallReplication(first)
	produced = h.Produce(n/3, n, 12*time.Second)
	waitRecords(int64(n/3) + 1000)
	mc, rc := second.Client(), first.Client()
	behind := 0
	for _, room := range h.In.Model.Rooms() {
		k := sink.RoomKeys(chaos.EnvName, room).Stable
		if mc.HGet(ctx, k, "mv").Val() != rc.HGet(ctx, k, "mv").Val() {
			behind++
		}
	}
	if behind == 0 {
		t.Fatal("the cut-off replica is behind the master in no room; the failover would test nothing")
	}
	midResets := p.Stats().RedisResets.Load()
	begin = time.Now()
	s.KillMaster()
	third := s.WaitNewMaster(second.Addr)
	named = time.Now()
	took = recovered(begin)
	s.ResumeReplication(first)
	t.Logf("master %s killed with its replica %s behind in %d of %d rooms: Sentinels agreed after %s, a batch completed after %s",
		second.Addr, third.Addr, behind, len(h.In.Model.Rooms()), named.Sub(begin).Round(time.Millisecond), took.Round(time.Millisecond))

	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	h.WaitCaughtUp(2 * time.Minute)
	client := s.Client()
	h.WaitSettled(client, time.Minute)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run did not stop cleanly: %v", err)
	}
	st := p.Stats()
	t.Logf("rebuilds %d (%d after the clean failover, %d after the kill), batch retries %d, 'redis went back in time' logged %d times",
		st.RedisResets.Load()-resets, midResets-resets, st.RedisResets.Load()-midResets, st.Retries.Load()-retries,
		logs.FilterMessageSnippet("redis went back in time").Len())
	if st.RedisResets.Load() <= midResets || logs.FilterMessageSnippet("redis went back in time").Len() == 0 {
		t.Fatal("the failover to a lagging replica was not detected as Redis going back in time, or no rebuild ran")
	}
	// Each switch is in the log at info level (redislog.go).
	for _, addr := range []string{second.Addr, third.Addr} {
		if logs.FilterMessage("redis client").FilterField(zap.String("msg", `sentinel: new master="`+s.Name+`" addr="`+addr+`"`)).Len() == 0 {
			t.Errorf("no info line for the switch to %s", addr)
		}
	}
	rep, err := chaos.Check(context.Background(), client, h.Kafka.ReadAll(h.Topics.TopN), h.Kafka.ReadAll(h.Topics.DLQ), nil, h.Inputs(), h.In)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("checked %d rooms, %d members, %d outputs (%d repeats): lost %d, applied twice %d", rep.Rooms, rep.Members, rep.Outputs, rep.Repeats, rep.Lost, rep.AppliedTwice)
	if !rep.OK() {
		for _, pr := range rep.Problems {
			t.Error(pr)
		}
		t.Fatalf("lost %d, applied twice %d, moved %d, mismatched %d", rep.Lost, rep.AppliedTwice, rep.Moved, rep.Mismatch)
	}
}

// TestWALReplayThroughSentinel runs `rostrum wal replay` through Sentinels
// that want an ACL user of their own, to a master that wants another: it
// reaches the master with the data nodes' credentials, and the Sentinels
// with theirs (rostrum-dev's TestBenchThroughSentinel does the same for
// the benchmark).
func TestWALReplayThroughSentinel(t *testing.T) {
	s := testenv.StartRedisSentinel(t, testenv.WithSentinelAuth("watcher", "sentinel-secret"),
		testenv.WithNodeOptions(testenv.WithACLUser("rostrum", "node-secret")))
	via := []string{"--redis-sentinel-master", s.Name, "--redis-sentinels", strings.Join(s.SentinelAddrs, ","),
		"--redis-sentinel-user", "watcher", "--redis-sentinel-password-file", testenv.WriteFile(t, "sentinel-pass", "sentinel-secret\n", 0o600),
		"--redis-user", "rostrum", "--redis-password-file", testenv.WriteFile(t, "redis-pass", "node-secret\n", 0o600)}
	ctx := context.Background()
	c := s.Client()

	var out bytes.Buffer
	if err := Main(ctx, append([]string{"wal", "replay", "--wal-dir", writeWAL(t), "--env", "test", "--log-level", "error"}, via...), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "replayed 2 batches, 10 records, 10 events (0 rejected) into 2 rooms") {
		t.Fatalf("wal replay: %s", out.String())
	}
	top, err := c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: sink.RoomKeys("test", "r-1").Ranking, Start: 0, Stop: -1, Rev: true}).Result()
	if err != nil || strings.Join(top, ",") != "u-9,u-7,u-5,u-3,u-1" {
		t.Fatalf("ranking on the master after replay: %v %v", top, err)
	}
}

// TestCheckThroughSentinelTLS runs `rostrum check` through Sentinels and
// data nodes that speak TLS only and want a client certificate: the
// --redis-tls-* settings reach both (go-redis has one TLS configuration
// for the Sentinels and the master).
func TestCheckThroughSentinelTLS(t *testing.T) {
	k := testenv.StartKafka(t)
	createTopics(t, k, "test")
	certs := testenv.NewCerts(t)
	s := testenv.StartRedisSentinel(t, testenv.WithNodeOptions(testenv.WithRedisTLS(certs, true)))
	out, code := check(t, "--brokers", k.Seeds[0], "--env", "test", "--redis-sentinel-master", s.Name,
		"--redis-sentinels", strings.Join(s.SentinelAddrs, ","),
		"--redis-tls-ca", certs.CAFile, "--redis-tls-cert", certs.ClientCertFile, "--redis-tls-key", certs.ClientKeyFile)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		"ok    redis sentinels: 3 of 3 answered, master " + s.Name + " at " + s.MasterAddr() + "\n",
		": answered, default user, Sentinels without AUTH, TLS\n",
		"ok    redis scripts: the ranking scripts loaded\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Without the client certificate the Sentinels refuse the handshake.
	out, code = check(t, "--brokers", k.Seeds[0], "--env", "test", "--redis-sentinel-master", s.Name,
		"--redis-sentinels", strings.Join(s.SentinelAddrs, ","), "--redis-tls-ca", certs.CAFile)
	if code != exitRedis || !strings.Contains(out, "FAIL  redis sentinels") {
		t.Fatalf("without a client certificate: exit %d, want %d:\n%s", code, exitRedis, out)
	}
}

// TestDemoThroughSentinel runs `rostrum demo` with the Sentinel flags: it
// starts no Redis of its own (its empty --redis does not count as given)
// and writes its rooms to the master the Sentinels name.
func TestDemoThroughSentinel(t *testing.T) {
	s := testenv.StartRedisSentinel(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, []string{"demo", "--kafka-port", "0", "--http", "127.0.0.1:0", "--gateway-http", "127.0.0.1:0",
			"--rooms", "2", "--members", "8", "--gray-rooms", "0", "--board-rate", "0", "--host-clicks", "0",
			"--redis-sentinel-master", s.Name, "--redis-sentinels", strings.Join(s.SentinelAddrs, ",")}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(stdout.String(), "seq ") {
		select {
		case err := <-done:
			t.Fatalf("demo stopped early: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stable list shown within 2m\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
	}
	if want := "Redis         master " + s.Name + " (Sentinels "; !strings.Contains(stdout.String(), want) {
		t.Fatalf("stdout lacks %q:\n%s", want, stdout.String())
	}
	keys, err := s.Master().Client().Keys(ctx, "rostrum:demo:*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("no demo keys on the master: %v %v", keys, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("demo did not stop cleanly: %v\nstderr:\n%s", err, stderr.String())
	}
}
