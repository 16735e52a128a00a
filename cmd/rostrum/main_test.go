package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
)

func parseRun(t *testing.T, args ...string) (*runFlags, error) {
	t.Helper()
	fs := cli.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	var f runFlags
	f.register(fs)
	return &f, parseFlags(fs, &f, args)
}

func TestConfigPrecedence(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "rostrum.yaml")
	if err := os.WriteFile(cfg, []byte("env: gray\ntop-n: 5\nbrokers: [a:1, b:2]\nredis: r:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ROSTRUM_TOP_N", "9")
	f, err := parseRun(t, "--config", cfg, "--redis", "flag:1")
	if err != nil {
		t.Fatal(err)
	}
	// flag > environment > file > default
	if f.redis != "flag:1" || f.topN != 9 || f.env != "gray" || f.brokers != "a:1,b:2" || f.walDir != "./wal" {
		t.Fatalf("got redis=%s top-n=%d env=%s brokers=%s wal-dir=%s", f.redis, f.topN, f.env, f.brokers, f.walDir)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(bad, []byte("topn: 5\n"), 0o600)
	if _, err := parseRun(t, "--config", bad); err == nil || !strings.Contains(err.Error(), `unknown key "topn"`) {
		t.Fatalf("unknown key: %v", err)
	}
	t.Setenv("ROSTRUM_ROOM_TTL", "soon")
	if _, err := parseRun(t); err == nil || !strings.Contains(err.Error(), "ROSTRUM_ROOM_TTL") {
		t.Fatalf("bad env value: %v", err)
	}
	os.Unsetenv("ROSTRUM_ROOM_TTL")

	cases := map[string][]string{
		"--top-n":                   {"--top-n", "101"},
		"--state-cache":             {"--state-cache", "-1"},
		"--rooms-per-script":        {"--rooms-per-script", "-1"},
		"--max-room-members":        {"--max-room-members", "-1"},
		"--unready-failures":        {"--unready-failures", "-1"},
		"--max-rooms-per-apply":     {"--max-rooms-per-apply", "-5"},
		"--unready-after":           {"--unready-after", "-1s"},
		"--wal-sync":                {"--wal-sync", "sometimes"},
		"--score-epoch":             {"--score-epoch", "yesterday"},
		"--env":                     {"--env", "Prod!"},
		"--log-format":              {"--log-format", "xml"},
		"--room-ttl":                {"--room-ttl", "1s"},
		"--stability":               {"--stability", "calm"},
		"--stability-dwell":         {"--stability-dwell", "-1s"},
		"--stability-grace":         {"--stability-grace", "2h"},
		"--stability-margin":        {"--stability-margin", "5000"},
		"--stability-due-interval":  {"--stability-due-interval", "1us"},
		"--unknown-types":           {"--unknown-types", "drop"},
		"--kafka-session-timeout":   {"--kafka-session-timeout", "10ms"},
		"--kafka-rebalance-timeout": {"--kafka-rebalance-timeout", "1h"},
		"--wal-segment-bytes":       {"--wal-segment-bytes", "4096"},
		"--ack-delay":               {"--ack-delay", "2m"},
	}
	for field, args := range cases {
		err := Main(context.Background(), append([]string{"run"}, args...), new(bytes.Buffer), new(bytes.Buffer))
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%v: error %v does not name %s", args, err, field)
		}
	}
	// --ranking names the flag and the field at fault, from the command
	// line and from the config file alike.
	rankingFile := filepath.Join(dir, "ranking.yaml")
	_ = os.WriteFile(rankingFile, []byte("ranking: spotlight, mic\n"), 0o600)
	for _, args := range [][]string{
		{"--ranking", "spotlight,screen_share,hand"},
		{"--ranking", "audio,volume,audio"},
		{"--ranking", ""},
		{"--config", rankingFile},
	} {
		err := Main(context.Background(), append([]string{"run"}, args...), new(bytes.Buffer), new(bytes.Buffer))
		want := map[string]string{"spotlight,screen_share,hand": `"hand"`, "audio,volume,audio": `"audio" is listed twice`, "": "empty", "--config": `"mic"`}
		key := args[1]
		if args[0] == "--config" {
			key = "--config"
		}
		if err == nil || !strings.Contains(err.Error(), "--ranking") || !strings.Contains(err.Error(), want[key]) {
			t.Errorf("%v: error %v does not name --ranking and %s", args, err, want[key])
		}
	}
}

func TestRunFailsWhenRedisUnreachable(t *testing.T) {
	err := Main(context.Background(), []string{"run", "--redis", "127.0.0.1:1", "--wal-dir", t.TempDir(), "--log-level", "error"},
		new(bytes.Buffer), new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "redis 127.0.0.1:1 unreachable") {
		t.Fatalf("got %v", err)
	}
}

func TestRunFailsWhenKafkaUnreachable(t *testing.T) {
	r := testenv.StartRedis(t)
	err := Main(context.Background(), []string{"run", "--brokers", "127.0.0.1:1", "--redis", r.Addr, "--wal-dir", t.TempDir(), "--log-level", "error"},
		new(bytes.Buffer), new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "kafka brokers [127.0.0.1:1] unreachable") {
		t.Fatalf("got %v", err)
	}
}

func TestRunFailsOnMissingTopics(t *testing.T) {
	r := testenv.StartRedis(t)
	k := testenv.StartKafka(t)
	err := Main(context.Background(), []string{"run", "--brokers", k.Seeds[0], "--redis", r.Addr, "--wal-dir", t.TempDir(), "--log-level", "error"},
		new(bytes.Buffer), new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "kafka topics missing: [prod.callbacks.rtc") {
		t.Fatalf("got %v", err)
	}
}

// rostrum codec explain prints the layout of the rules it is given.
func TestCodecExplain(t *testing.T) {
	var out bytes.Buffer
	if err := Main(context.Background(), []string{"codec", "explain"}, &out, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"spotlight:1 screen_share:1 audio:1 volume:10 video:1 role:3 time:36 (53 bits)", "4ms units", "rules version"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explain lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := Main(context.Background(), []string{"codec", "explain", "--ranking", "volume,audio"}, &out, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "volume:10 audio:1 time:38 (49 bits)") {
		t.Errorf("explain --ranking volume,audio:\n%s", out.String())
	}
	if err := Main(context.Background(), []string{"codec", "explain", "--ranking", "mic"}, &out, new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), `--ranking: unknown field "mic"`) {
		t.Errorf("bad --ranking: %v", err)
	}
}

// TestGroupTimeoutFlags: the group's session and rebalance timeouts have
// their documented defaults and come from the environment and the config
// file like every flag.
func TestGroupTimeoutFlags(t *testing.T) {
	f, err := parseRun(t)
	if err != nil {
		t.Fatal(err)
	}
	pc, _, _, err := f.pipelineConfig(zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if pc.Group.SessionTimeout != processor.DefaultSessionTimeout || pc.Group.RebalanceTimeout != processor.DefaultRebalanceTimeout {
		t.Fatalf("defaults: session %s, rebalance %s", pc.Group.SessionTimeout, pc.Group.RebalanceTimeout)
	}
	if pc.Group.MemberFile != filepath.Join(f.walDir, "group-member") {
		t.Fatalf("member file %q, want one beside the WAL", pc.Group.MemberFile)
	}
	cfg := filepath.Join(t.TempDir(), "rostrum.yaml")
	if err := os.WriteFile(cfg, []byte("kafka-rebalance-timeout: 45s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ROSTRUM_KAFKA_SESSION_TIMEOUT", "20s")
	if f, err = parseRun(t, "--config", cfg); err != nil {
		t.Fatal(err)
	}
	if pc, _, _, err = f.pipelineConfig(zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	if pc.Group.SessionTimeout != 20*time.Second || pc.Group.RebalanceTimeout != 45*time.Second {
		t.Fatalf("from the environment and the file: session %s, rebalance %s", pc.Group.SessionTimeout, pc.Group.RebalanceTimeout)
	}
}

// TestRunFlagNamesCoverConfig keeps the flags' names of the library
// fields complete: every field of processor.Config and sink.Config is either
// set by a flag of `rostrum run` that says so where it is registered
// (Group.Sets, so that its Validate error names the flag), or read from the
// config file (fileFieldNames), or listed here as set by the wiring.
func TestRunFlagNamesCoverConfig(t *testing.T) {
	wiring := map[string]bool{ // set by runProcessor or pipelineConfig, never from one flag
		"Group.MemberFile": true, "MaxBatchBytes": true, "TopicSetup.More": true, "Decode": true, "WALRetention.PruneEvery": true,
		"Retry.Backoff": true, "GenerationFile": true, "GenerationCheckEvery": true, "Logger": true, "Observer": true,
		"KafkaOpts": true, "ConsumerOpts": true, "TracerProvider": true, "BoardStore": true, "BoardExpireEvery": true,
	}
	fs := cli.NewFlagSet("run", flag.ContinueOnError)
	new(runFlags).register(fs)
	names := fs.FieldFlags()
	// fields lists a Config's fields as its Validate names them: a field of
	// one of the package's own Config structs by its path (Stable.Dwell).
	var fields func(typ reflect.Type, prefix string) []string
	fields = func(typ reflect.Type, prefix string) []string {
		var out []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == typ.PkgPath() {
				out = append(out, fields(f.Type, prefix+f.Name+".")...)
				continue
			}
			out = append(out, prefix+f.Name)
		}
		return out
	}
	for _, typ := range []reflect.Type{reflect.TypeOf(processor.Config{}), reflect.TypeOf(sink.Config{})} {
		for _, name := range fields(typ, "") {
			_, byFlag := names[name]
			_, byFile := fileFieldNames[name]
			if !byFlag && !byFile && !wiring[name] {
				t.Errorf("%s.%s: no flag of rostrum run Sets it, and not listed as wiring", typ, name)
			}
		}
	}
}
