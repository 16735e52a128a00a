package boarddef_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/rostrumhq/rostrum/board/boarddef"
)

// TestWindowSlicesConfig reads windows written both ways, checks what a
// board with per-window slices compiles to (the board's slice is the
// shortest when none is given; each window is named by its length and
// counts its own slices) and when an event becomes late: when the last
// window to hold it lets it go, which may be a shorter window with a
// coarser slice.
func TestWindowSlicesConfig(t *testing.T) {
	const doc = `
boards:
  - name: item-trades
    events: [trade]
    member: room_id
    kind: windows
    windows: [{length: 3m, slice: 1m}, {length: 10m, slice: 1m}, {length: 1h, slice: 5m}, {length: 24h, slice: 1h}]
  - name: mixed
    events: [trade]
    member: room_id
    kind: windows
    slice: 1m
    windows: [10m, {length: 12m, slice: 2m}, {length: 30m, slice: 30m}]
`
	var file struct {
		Boards []boarddef.Config `yaml:"boards"`
	}
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		t.Fatal(err)
	}
	want := []boarddef.Window{{Length: 10 * time.Minute}, {Length: 12 * time.Minute, Slice: 2 * time.Minute}, {Length: 30 * time.Minute, Slice: 30 * time.Minute}}
	if !slices.Equal(file.Boards[1].Windows, want) {
		t.Fatalf("windows read as %v, want %v", file.Boards[1].Windows, want)
	}
	bs, err := boarddef.Compile(file.Boards)
	if err != nil {
		t.Fatal(err)
	}
	it, mixed := bs[0], bs[1]
	if it.Slice() != time.Minute || !slices.Equal(it.Windows(), []string{"3m", "10m", "1h", "24h"}) ||
		!slices.Equal(it.WindowSlices(), []int64{3, 10, 12, 24}) ||
		!slices.Equal(it.WindowSliceLengths(), []time.Duration{time.Minute, time.Minute, 5 * time.Minute, time.Hour}) {
		t.Fatalf("item-trades: slice %s, windows %v of %v slices of %v", it.Slice(), it.Windows(), it.WindowSlices(), it.WindowSliceLengths())
	}
	if j, ok := it.Window("24h0m0s"); !ok || j != 3 {
		t.Fatalf("window 24h0m0s: %d %v", j, ok)
	}
	// An event at 10:07:30: the 24h window holds it in the slice of
	// 10:00 until 10:00 + 24h; the 30m window of "mixed" (one slice: the
	// current one, 10:00-10:30) until 10:30, past its 12m window (the slice
	// of 10:06, until 10:06 + 12m).
	ts := time.Date(2027, 5, 3, 10, 7, 30, 0, time.UTC)
	if got, want := it.LateAt(ts.UnixMilli()), time.Date(2027, 5, 4, 10, 0, 0, 0, time.UTC).Add(time.Minute); !got.Equal(want) {
		t.Errorf("item-trades LateAt %s, want %s", got.UTC(), want)
	}
	if got, want := mixed.LateAt(ts.UnixMilli()), time.Date(2027, 5, 3, 10, 30, 0, 0, time.UTC).Add(time.Minute); !got.Equal(want) {
		t.Errorf("mixed LateAt %s, want %s", got.UTC(), want)
	}
	// At 11:00:59 (grace 1m) the 1h window of 5m slices has let go of
	// every slice up to 10:00 (index 10:00/5m - 1).
	now := time.Date(2027, 5, 3, 11, 0, 59, 0, time.UTC)
	if got, want := it.ExpiredThrough(2, now), time.Date(2027, 5, 3, 10, 0, 0, 0, time.UTC).UnixMilli()/(5*60000)-1; got != want {
		t.Errorf("ExpiredThrough(1h window) = %d, want %d", got, want)
	}

	// A misspelt key inside a window is refused like any unknown field.
	dec = yaml.NewDecoder(bytes.NewReader([]byte("boards:\n  - {name: x, windows: [{length: 1h, slize: 5m}]}\n")))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err == nil || !strings.Contains(err.Error(), "slize") {
		t.Errorf("unknown window key: %v", err)
	}
}
