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
