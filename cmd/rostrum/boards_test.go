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

func TestParseBoards(t *testing.T) {
	cfgs, err := parseBoards(examples.BoardsYAML)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := compileBoards(cfgs, "examples/boards.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 12 || bs[0].Name() != "room-gifts-7d" {
		t.Fatalf("compiled %d boards, first %q", len(bs), bs[0].Name())
	}

	// Flag keys beside boards: are left to applySources.
	cfgs, err = parseBoards([]byte("env: prod\ntop-n: 5\n"))
	if err != nil || cfgs != nil {
		t.Fatalf("no boards: got %v, %v", cfgs, err)
	}
	if _, err := parseBoards([]byte("boards:\n  - name: a\n    slcie: 1m\n")); err == nil || !strings.Contains(err.Error(), "slcie") {
		t.Fatalf("misspelt board key: %v", err)
	}
}

// TestRunRejectsBadBoards: a board that does not compile stops start-up
// with the file, the board's index and the field, before any connection.
func TestRunRejectsBadBoards(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rostrum.yaml")
	cfg := "env: prod\nboards:\n  - name: gifts\n    events: [gift]\n    member: room_id\n    kind: rolling\n    slice: 7m\n    slices: 4\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Main(context.Background(), []string{"run", "--config", path, "--brokers", "127.0.0.1:1", "--redis", "127.0.0.1:1"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "boards[0].slice") || !strings.Contains(err.Error(), path) {
		t.Fatalf("got %v, want an error naming %s and boards[0].slice", err, path)
	}

}
