package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// TestBoardsPrune fills two boards, removes one from the config, and
// checks that `rostrum boards prune` lists only the removed board's keys,
// changes nothing without --delete, and with it deletes exactly those keys
// (the kept board's and another environment's stay).
func TestBoardsPrune(t *testing.T) {
	ctx := context.Background()
	dir := giftWAL(t, 4, 4, time.Now().UnixMilli())
	config := func(boards ...string) string {
		path := filepath.Join(t.TempDir(), "rostrum.yaml")
		y := "boards:\n"
		for _, b := range boards {
			y += "  - {name: " + b + ", events: [gift], member: user_id, kind: periodic, period: day}\n"
		}
		if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	r := testenv.StartRedis(t)
	rc := r.Client()
	run := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if err := Main(ctx, append(args, "--redis", r.Addr, "--env", "test", "--log-level", "error"), &stdout, &stderr); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr.String())
		}
		return stdout.String()
	}
	run("wal", "replay", "--wal-dir", dir, "--config", config("gifts-a", "gifts-b"))
	if err := rc.Set(ctx, "rostrum:other:board:{gifts-b}:x", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	keys := func(pattern string) int { return len(rc.Keys(ctx, pattern).Val()) }
	a, b := keys("rostrum:test:board:{gifts-a[}@]*"), keys("rostrum:test:board:{gifts-b[}@]*")
	if a == 0 || b == 0 {
		t.Fatalf("boards not filled: %d and %d keys", a, b)
	}

	out := run("boards", "prune", "--config", config("gifts-a"))
	if !strings.Contains(out, fmt.Sprintf("board gifts-b: %d keys", b)) || strings.Contains(out, "gifts-a") {
		t.Fatalf("listing:\n%s", out)
	}
	if keys("rostrum:test:board:{gifts-b[}@]*") != b {
		t.Fatal("keys deleted without --delete")
	}
	out = run("boards", "prune", "--config", config("gifts-a"), "--delete")
	if !strings.Contains(out, fmt.Sprintf("deleted %d keys of 1 removed boards", b)) {
		t.Fatalf("delete:\n%s", out)
	}
	if n := keys("rostrum:test:board:{gifts-b[}@]*"); n != 0 {
		t.Fatalf("%d keys of the removed board left", n)
	}
	if keys("rostrum:test:board:{gifts-a[}@]*") != a || keys("rostrum:other:board:*") != 1 {
		t.Fatal("prune deleted keys of a kept board or of another environment")
	}
	if out := run("boards", "prune", "--config", config("gifts-a")); !strings.Contains(out, "no keys of removed boards") {
		t.Fatalf("after the delete:\n%s", out)
	}
}

// TestOfflineCommandsTakeTheirFlags: `wal replay` and `boards prune` take
// the settings they use and no others (a Kafka or HTTP flag on their
// command line is an error), accept the config file `rostrum run` reads
// (its other keys unused), and still refuse a key no command knows.
func TestOfflineCommandsTakeTheirFlags(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t)
	dir := giftWAL(t, 2, 2, time.Now().UnixMilli())
	runFile := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(runFile, []byte("brokers: kafka-1:9092\nhttp: 127.0.0.1:0\nack-delay: 2s\ncontrol-lease: 30s\n"+
		"boards:\n  - {name: gifts, events: [gift], member: user_id, kind: periodic, period: day}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("brokerz: kafka-1:9092\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rostrum := func(args ...string) (string, error) {
		var stdout, stderr bytes.Buffer
		err := Main(ctx, append(args, "--log-level", "error"), &stdout, &stderr)
		return stdout.String() + stderr.String(), err
	}
	for _, cmd := range [][]string{{"wal", "replay", "--wal-dir", dir}, {"boards", "prune"}} {
		name := strings.Join(cmd[:2], " ")
		for _, flag := range []string{"--brokers=kafka-1:9092", "--http=:0", "--ack-delay=2s", "--instance-id=a"} {
			if out, err := rostrum(append(append([]string{}, cmd...), flag, "--redis", r.Addr)...); err == nil || !strings.Contains(out+err.Error(), "not defined") {
				t.Errorf("rostrum %s %s: %v, want an undefined flag\n%s", name, flag, err, out)
			}
		}
		if out, err := rostrum(append(append([]string{}, cmd...), "--config", runFile, "--redis", r.Addr, "--env", "test")...); err != nil {
			t.Errorf("rostrum %s with run's file: %v\n%s", name, err, out)
		}
		_, err := rostrum(append(append([]string{}, cmd...), "--config", bad, "--redis", r.Addr)...)
		if err == nil || !strings.Contains(err.Error(), `unknown key "brokerz"`) {
			t.Errorf("rostrum %s with an unknown key: %v", name, err)
		}
	}
	// A setting the replay checks names its flag.
	if _, err := rostrum("wal", "replay", "--wal-dir", dir, "--redis", r.Addr, "--stability-dwell", "2m"); err == nil || !strings.Contains(err.Error(), "--stability-dwell must be between") {
		t.Errorf("wal replay --stability-dwell 2m: %v, want an error naming the flag", err)
	}
}

// TestPruneDeleteOnlyFromTheCommandLine: --delete deletes only when typed.
// ROSTRUM_DELETE or a delete key in a shared config file stops the command
// with an error naming the switch, before it reads Redis, so that nothing
// inherited makes a listing run delete.
func TestPruneDeleteOnlyFromTheCommandLine(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "rostrum.yaml")
	if err := os.WriteFile(path, []byte("delete: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// No Redis listens here: the errors come before any connection.
	args := []string{"boards", "prune", "--redis", "127.0.0.1:1", "--env", "test", "--log-level", "error"}
	var stdout, stderr bytes.Buffer
	err := Main(ctx, append(args, "--config", path), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "delete: --delete is taken on the command line only") {
		t.Fatalf("delete in the config file: got %v", err)
	}
	t.Setenv("ROSTRUM_DELETE", "true")
	err = Main(ctx, args, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "ROSTRUM_DELETE is set, but --delete is taken on the command line only") {
		t.Fatalf("ROSTRUM_DELETE: got %v", err)
	}
}
