package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rostrumhq/rostrum/control"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
)

// createTopics creates env's topics from the processor's specifications,
// as `rostrum run --create-topics` does: the pipeline's, the control API's
// and the boards' settled periods.
func createTopics(t *testing.T, k *testenv.Kafka, env string) {
	t.Helper()
	more := control.TopicsFor("", env).Configs()
	compact := "compact"
	more[processor.TopicsFor("", env).Settled] = map[string]*string{"cleanup.policy": &compact}
	specs := processor.Config{Brokers: k.Seeds, Env: env, TopicSetup: processor.TopicSetup{More: more}}.TopicSpecs()
	if _, err := processor.CreateTopics(context.Background(), k.Admin(), specs, -1); err != nil {
		t.Fatal(err)
	}
}

// check runs `rostrum check` and returns its output and exit status.
func check(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	err := Main(context.Background(), append([]string{"check", "--log-level", "error"}, args...), &out, new(bytes.Buffer))
	var ee *exitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String(), ee.code
	default:
		t.Fatalf("check %v: %v\n%s", args, err, out.String())
		return "", 0
	}
}

// TestCheckPasses runs every check against topics created by
// --create-topics' specifications, a real redis-server with boards
// configured, and prints one ok line per check.
func TestCheckPasses(t *testing.T) {
	k := testenv.StartKafka(t)
	createTopics(t, k, "test")
	r := testenv.StartRedis(t)
	cfg := testenv.WriteFile(t, "rostrum.yaml", "boards:\n  - {name: gifts-day, events: [gift], member: user_id, kind: periodic, period: day}\n", 0o600)
	out, code := check(t, "--brokers", k.Seeds[0], "--redis", r.Addr, "--env", "test", "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		"ok    config: env test, group rostrum-test, 1 boards",
		"ok    kafka brokers: 1 answered",
		"ok    topic test.callbacks.rtc: 3 partitions, cleanup.policy=delete",
		"ok    topic test.callbacks.dlq: 3 partitions, cleanup.policy=delete, retention.ms=2592000000",
		"ok    topic test.ranking.topn: 3 partitions, cleanup.policy=compact",
		"ok    topic test.boards.settled: 3 partitions, cleanup.policy=compact",
		"ok    topic test.rooms.layout: 3 partitions, cleanup.policy=compact",
		"ok    topic test.recording.commands: 3 partitions",
		"ok    consumer group rostrum-test:",
		"ok    redis " + r.Addr + ": answered, default user, no TLS",
		"ok    redis scripts: the ranking scripts and the board scripts loaded",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 13 {
		t.Errorf("%d lines, want 13 (one per check):\n%s", n, out)
	}
}

// TestCheckExitCodes breaks one thing at a time and checks the exit status
// of its class and the line that names it.
func TestCheckExitCodes(t *testing.T) {
	r := testenv.StartRedis(t)
	good := testenv.StartKafka(t)
	createTopics(t, good, "test")
	empty := testenv.StartKafka(t)
	emptier := testenv.StartKafka(t) // stays without topics
	plain := testenv.StartKafka(t, testenv.WithTopics(2, append(processor.TopicsFor("", "test").Inputs(),
		"test.callbacks.dlq", "test.ranking.topn", ctlTopics.Commands, ctlTopics.Layout)...))
	// A Redis user that may not load scripts.
	if err := r.Client().Do(context.Background(), "ACL", "SETUSER", "noscripts", "on", ">pw-noscripts", "~*", "&*", "+@all", "-script").Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		line string
	}{
		{"config", []string{"--brokers", good.Seeds[0], "--redis", r.Addr, "--top-n", "200"}, exitConfig, "FAIL  config: --top-n must be between 1 and 100, got 200"},
		{"kafka", []string{"--brokers", "127.0.0.1:1", "--redis", r.Addr}, exitKafka, "FAIL  kafka brokers:"},
		{"topics missing", []string{"--brokers", emptier.Seeds[0], "--redis", r.Addr}, exitTopics, "FAIL  topic test.callbacks.rtc: missing"},
		{"output not compacted", []string{"--brokers", plain.Seeds[0], "--redis", r.Addr}, exitTopics,
			"FAIL  topic test.ranking.topn: 2 partitions, cleanup.policy=delete; the output must be compacted"},
		{"output allowed", []string{"--brokers", plain.Seeds[0], "--redis", r.Addr, "--allow-uncompacted-output"}, 0,
			"ok    topic test.ranking.topn: 2 partitions, cleanup.policy=delete (allowed by --allow-uncompacted-output)"},
		{"redis", []string{"--brokers", good.Seeds[0], "--redis", "127.0.0.1:1"}, exitRedis, "FAIL  redis 127.0.0.1:1:"},
		{"scripts", []string{"--brokers", good.Seeds[0], "--redis", r.Addr, "--redis-user", "noscripts", "--redis-password", "pw-noscripts"},
			exitScripts, "FAIL  redis scripts:"},
		{"create topics", []string{"--brokers", empty.Seeds[0], "--redis", r.Addr, "--create-topics", "--output-partitions", "1"}, 0,
			"ok    topic test.ranking.topn: 1 partitions, cleanup.policy=compact"},
		{"first class wins", []string{"--brokers", emptier.Seeds[0], "--redis", "127.0.0.1:1"}, exitTopics, "FAIL  redis 127.0.0.1:1:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, code := check(t, append([]string{"--env", "test"}, c.args...)...)
			if code != c.code || !strings.Contains(out, c.line) {
				t.Errorf("exit %d, want %d; want a line %q in:\n%s", code, c.code, c.line, out)
			}
		})
	}
}

// TestRunRefusesUncompactedOutput: rostrum run runs the same topic checks at
// start and stops on an output topic without compaction.
func TestRunRefusesUncompactedOutput(t *testing.T) {
	topics := processor.TopicsFor("", "test")
	k := testenv.StartKafka(t, testenv.WithTopics(1, append(topics.Inputs(), topics.DLQ, topics.TopN, ctlTopics.Commands, ctlTopics.Layout)...))
	r := testenv.StartRedis(t)
	err := Main(context.Background(), []string{"run", "--brokers", k.Seeds[0], "--redis", r.Addr, "--env", "test",
		"--wal-dir", t.TempDir(), "--http", "", "--log-level", "error"}, new(bytes.Buffer), new(bytes.Buffer))
	if !errors.Is(err, processor.ErrUncompactedOutput) || !strings.Contains(err.Error(), "--allow-uncompacted-output") {
		t.Fatalf("run with an uncompacted output: %v", err)
	}
}
