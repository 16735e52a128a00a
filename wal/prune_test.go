package wal

import (
	"os"
	"testing"
	"time"
)

// prunableLog returns a log of ten batches, one segment each, appended a
// minute apart starting at t0, and the clock, now at t0+10m.
func prunableLog(t *testing.T) (*Log, *fakeClock) {
	t.Helper()
	clock := &fakeClock{t: time.UnixMilli(1763700000000)}
	l := openTest(t, t.TempDir(), Config{SegmentBytes: 1})
	l.now = clock.now
	for range 10 {
		appendBatches(t, l, 1)
		clock.t = clock.t.Add(time.Minute)
	}
	if n := len(l.Segments()); n != 10 {
		t.Fatalf("%d segments, want 10", n)
	}
	t.Cleanup(func() { l.Close() })
	return l, clock
}

func TestPrune(t *testing.T) {
	segBytes := func(l *Log) int64 { return l.Segments()[0].Bytes } // all alike but for the records
	tests := []struct {
		name     string
		keepFrom uint64
		maxAge   time.Duration
		maxBytes func(l *Log) int64
		first    uint64 // first seq left
	}{
		{"nothing enabled", 11, 0, nil, 1},
		{"by age", 11, 5 * time.Minute, nil, 6},        // batches appended at t0+0..4m are more than 5m old
		{"by age, all", 11, time.Millisecond, nil, 10}, // never the active segment
		{"by age, unapplied kept", 3, 5 * time.Minute, nil, 3},
		{"by age, nothing applied", 1, time.Millisecond, nil, 1},
		{"by age, none old enough", 11, time.Hour, nil, 1},
		{"by size", 11, 0, func(l *Log) int64 {
			var total int64
			for _, s := range l.Segments()[6:] {
				total += s.Bytes
			}
			return total
		}, 7},
		{"by size, all", 11, 0, func(*Log) int64 { return 1 }, 10},
		{"by size, unapplied kept", 5, 0, func(*Log) int64 { return 1 }, 5},
		{"by size, within the limit", 11, 0, func(l *Log) int64 { return 100 * segBytes(l) }, 1},
		{"age or size", 11, 8 * time.Minute, func(l *Log) int64 {
			var total int64
			for _, s := range l.Segments()[4:] {
				total += s.Bytes
			}
			return total
		}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := prunableLog(t)
			before := l.Segments()
			var maxBytes int64
			if tt.maxBytes != nil {
				maxBytes = tt.maxBytes(l)
			}
			removed, err := l.Prune(tt.keepFrom, tt.maxAge, maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			after := l.Segments()
			if removed != int(tt.first-1) || after[0].FirstSeq != tt.first || len(after) != 10-removed {
				t.Fatalf("removed %d, first seq now %d; want first seq %d", removed, after[0].FirstSeq, tt.first)
			}
			for _, s := range before[:removed] {
				if _, err := os.Stat(s.Path); !os.IsNotExist(err) {
					t.Fatalf("pruned segment %s still there: %v", s.Path, err)
				}
				if s.LastSeq >= tt.keepFrom {
					t.Fatalf("pruned segment %+v holds a batch >= keepFrom %d", s, tt.keepFrom)
				}
			}
			// What is left replays, also after a reopen, and takes appends.
			var got []uint64
			if err := l.Replay(0, func(seq uint64, recs []Record) error {
				got = append(got, seq)
				return nil
			}); err != nil || len(got) != 10-removed || got[0] != tt.first {
				t.Fatalf("Replay after Prune: %v, %v", got, err)
			}
			dir := l.dir
			l.Close()
			l = openTest(t, dir, Config{})
			defer l.Close()
			if segs := l.Segments(); segs[0].FirstSeq != tt.first || l.LastSeq() != 10 {
				t.Fatalf("after reopen: %+v, LastSeq %d", segs, l.LastSeq())
			}
			if seq, err := l.Append(testBatch(11, 1)); err != nil || seq != 11 {
				t.Fatalf("Append after Prune: %d, %v", seq, err)
			}
		})
	}
}

func TestPruneNeverTheActiveSegment(t *testing.T) {
	l := openTest(t, t.TempDir(), Config{})
	defer l.Close()
	appendBatches(t, l, 5)
	removed, err := l.Prune(100, time.Nanosecond, 1)
	if err != nil || removed != 0 {
		t.Fatalf("Prune removed %d, %v", removed, err)
	}
	checkBatches(t, l, 1, 5)
}
