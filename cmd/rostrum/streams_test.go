package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rostrumhq/rostrum/web"
)

// TestStreamFlags: the stream limits are flags, ROSTRUM_* variables and
// config keys like every flag of run, default to web's defaults, reach
// web.Config, and a limit below 1 stops start-up naming its flag.
func TestStreamFlags(t *testing.T) {
	f, err := parseRun(t)
	if err != nil {
		t.Fatal(err)
	}
	var o web.Config
	if err := f.streams.apply(&o); err != nil {
		t.Fatal(err)
	}
	if o.MaxStreams != web.DefaultMaxStreams || o.MaxStreamsPerClient != web.DefaultMaxStreamsPerClient || o.MaxStreamRooms != web.DefaultMaxStreamRooms {
		t.Fatalf("defaults %d %d %d", o.MaxStreams, o.MaxStreamsPerClient, o.MaxStreamRooms)
	}
	cfg := filepath.Join(t.TempDir(), "rostrum.yaml")
	if err := os.WriteFile(cfg, []byte("max-stream-rooms: 50\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ROSTRUM_MAX_STREAMS_PER_CLIENT", "4")
	if f, err = parseRun(t, "--config", cfg, "--max-streams", "300"); err != nil {
		t.Fatal(err)
	}
	if err := f.streams.apply(&o); err != nil {
		t.Fatal(err)
	}
	if o.MaxStreams != 300 || o.MaxStreamsPerClient != 4 || o.MaxStreamRooms != 50 {
		t.Fatalf("flag, variable, file: %d %d %d, want 300 4 50", o.MaxStreams, o.MaxStreamsPerClient, o.MaxStreamRooms)
	}
	if f, err = parseRun(t, "--max-stream-rooms", "0"); err != nil {
		t.Fatal(err)
	}
	if err := f.streams.apply(&o); err == nil || !strings.Contains(err.Error(), "--max-stream-rooms") {
		t.Fatalf("--max-stream-rooms 0: %v", err)
	}
}
