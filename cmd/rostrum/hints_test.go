package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rostrumhq/rostrum/examples"
)

// TestParseHints: examples/boards.yaml's hints compile over its boards; a
// misspelt key in a rule is an error naming it.
func TestParseHints(t *testing.T) {
	cfgs, err := parseBoards(examples.BoardsYAML)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := compileBoards(cfgs, "examples/boards.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := parseHints(examples.BoardsYAML)
	if err != nil || len(rules) != 5 || rules[0].Name != "unread" || !rules[1].Stop {
		t.Fatalf("rules %+v, %v", rules, err)
	}
	c, err := compileHints(rules, bs, "examples/boards.yaml")
	if err != nil || c == nil {
		t.Fatalf("compile: %v", err)
	}
	if _, err := parseHints([]byte("hints:\n  - name: a\n    whne: true\n")); err == nil || !strings.Contains(err.Error(), "whne") {
		t.Fatalf("misspelt hint key: %v", err)
	}
	if _, err := compileHints(rules, nil, "--config x"); err == nil || !strings.Contains(err.Error(), "boards: is empty") {
		t.Fatalf("hints without boards: %v", err)
	}
}

// TestRunRejectsBadHints: a hint rule that does not compile stops start-up
// with the file, the rule's index and name, and the reason, before any
// connection.
func TestRunRejectsBadHints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rostrum.yaml")
	cfg := "env: prod\nboards:\n  - name: weekly-read\n    events: [read]\n    member: user_id\n    value: one\n    kind: periodic\n    period: week\n" +
		"hints:\n  - name: fine\n    when: weekly_read > 0\n    text: ok\n" +
		"  - name: unread\n    when: weekly_read < weekly_recieved / 2\n    text: \"{{.weekly_read}}\"\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", path, "--brokers", "127.0.0.1:1", "--redis", "127.0.0.1:1"}
	const want = "hints[1] (unread): when: unknown name weekly_recieved"
	err := Main(context.Background(), append([]string{"run"}, args...), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
		t.Fatalf("run: got %v, want an error naming %s and %s", err, path, want)
	}
	// check prints its lines and fails with the config class.
	var out strings.Builder
	err = Main(context.Background(), append([]string{"check"}, args...), &out, &out)
	if err == nil || !strings.Contains(out.String(), want) {
		t.Fatalf("check: %v\n%s", err, out.String())
	}
}
