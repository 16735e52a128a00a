package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestAppendReplay(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, Config{})
	if got := l.LastSeq(); got != 0 {
		t.Fatalf("LastSeq of a new log = %d", got)
	}
	if segs := l.Segments(); len(segs) != 1 || segs[0].Path != filepath.Join(dir, "0000000000000001.wal") ||
		segs[0].FirstSeq != 1 || segs[0].LastSeq != 0 || segs[0].Bytes != headerSize {
		t.Fatalf("segments of a new log: %+v", segs)
	}
	appendBatches(t, l, 10)
	checkBatches(t, l, 1, 10)

	tests := []struct {
		from  uint64
		first uint64
	}{{0, 1}, {1, 1}, {4, 4}, {10, 10}, {11, 0}, {1000, 0}}
	for _, tt := range tests {
		var got []uint64
		if err := l.Replay(tt.from, func(seq uint64, _ []Record) error {
			got = append(got, seq)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if tt.first == 0 {
			if len(got) != 0 {
				t.Errorf("Replay(%d) gave %v, want nothing", tt.from, got)
			}
			continue
		}
		if len(got) != int(10-tt.first+1) || got[0] != tt.first {
			t.Errorf("Replay(%d) gave %v, want %d..10", tt.from, got, tt.first)
		}
	}

	stop := errors.New("stop")
	calls := 0
	if err := l.Replay(1, func(uint64, []Record) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("Replay returned %v after %d calls, want fn's error after 1", err, calls)
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTest(t, dir, Config{})
	checkBatches(t, l, 1, 10)
	appendBatches(t, l, 1) // seqs go on after a reopen
	checkBatches(t, l, 1, 11)
	l.Close()
}

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	const segBytes = 1024
	l := openTest(t, dir, Config{SegmentBytes: segBytes, Sync: SyncNone})
	appendBatches(t, l, 60)
	// A batch larger than a segment gets a segment of its own.
	big := []Record{{Topic: "t", Value: make([]byte, 3*segBytes)}}
	seq, err := l.Append(big)
	if err != nil {
		t.Fatal(err)
	}
	appendBatches(t, l, 1)

	segs := l.Segments()
	if len(segs) < 5 {
		t.Fatalf("only %d segments", len(segs))
	}
	next := uint64(1)
	for _, s := range segs {
		if s.FirstSeq != next || filepath.Base(s.Path) != segmentName(s.FirstSeq) {
			t.Fatalf("segment %+v, want it to start at %d", s, next)
		}
		if s.Batches != int(s.LastSeq-s.FirstSeq+1) || s.Batches == 0 {
			t.Fatalf("segment %+v", s)
		}
		if s.Bytes > segBytes && s.Batches > 1 {
			t.Fatalf("segment %+v exceeds %d bytes with more than one batch", s, segBytes)
		}
		if st, err := os.Stat(s.Path); err != nil || st.Size() != s.Bytes {
			t.Fatalf("segment %s: stat %v, %v; want %d bytes", s.Path, st, err, s.Bytes)
		}
		next = s.LastSeq + 1
	}
	if s := segs[len(segs)-2]; s.FirstSeq != seq || s.LastSeq != seq {
		t.Fatalf("the large batch %d is in %+v, want it alone", seq, s)
	}

	check := func(l *Log) {
		t.Helper()
		for _, from := range []uint64{0, 17, seq, seq + 1} {
			want := max(from, 1)
			if err := l.Replay(from, func(got uint64, recs []Record) error {
				if got != want {
					return fmt.Errorf("seq %d, want %d", got, want)
				}
				if got == seq {
					if !sameRecords(recs, big) {
						return fmt.Errorf("large batch differs")
					}
				} else if !sameRecords(recs, testBatch(got, batchLen(got))) {
					return fmt.Errorf("batch %d differs", got)
				}
				want++
				return nil
			}); err != nil || want != seq+2 {
				t.Fatalf("Replay(%d): %v, ended at %d", from, err, want-1)
			}
		}
	}
	check(l)
	l.Close()
	l = openTest(t, dir, Config{SegmentBytes: segBytes})
	defer l.Close()
	check(l)
	if got := l.Segments(); len(got) != len(segs) {
		t.Fatalf("%d segments after reopen, want %d", len(got), len(segs))
	}
}

func TestLock(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, Config{})
	appendBatches(t, l, 2)
	if l2, err := Open(dir, Config{}); !errors.Is(err, ErrLocked) {
		if l2 != nil {
			l2.Close()
		}
		t.Fatalf("second Open: err = %v, want ErrLocked", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTest(t, dir, Config{})
	checkBatches(t, l, 1, 2)
	l.Close()
}

func TestClosed(t *testing.T) {
	l := openTest(t, t.TempDir(), Config{})
	appendBatches(t, l, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Append(testBatch(2, 1)); err != ErrClosed {
		t.Fatalf("Append after Close: %v", err)
	}
	if err := l.Replay(0, func(uint64, []Record) error { return nil }); err != ErrClosed {
		t.Fatalf("Replay after Close: %v", err)
	}
	if _, err := l.Prune(10, 0, 1); err != ErrClosed {
		t.Fatalf("Prune after Close: %v", err)
	}
	if got := l.LastSeq(); got != 1 {
		t.Fatalf("LastSeq after Close = %d", got)
	}
}

func TestAppendRefusedBatchHasNoEffect(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, Config{})
	appendBatches(t, l, 2)
	_, err := l.Append([]Record{testBatch(3, 1)[0], {Topic: strings.Repeat("t", 70000)}})
	if err == nil || !strings.Contains(err.Error(), "topic is 70000 bytes") {
		t.Fatalf("Append: %v", err)
	}
	appendBatches(t, l, 1)
	checkBatches(t, l, 1, 3)
	l.Close()
	l = openTest(t, dir, Config{})
	checkBatches(t, l, 1, 3)
	l.Close()
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		opts Config
		want string
	}{
		{Config{SegmentBytes: -1}, "SegmentBytes must not be negative"},
		{Config{Sync: 7}, "unknown Sync policy 7"},
	}
	for _, tt := range tests {
		if _, err := Open(t.TempDir(), tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%+v): %v, want %q", tt.opts, err, tt.want)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentReaders runs Replay, Inspect, LastSeq and Segments while one
// writer appends, rotates and prunes; run it with -race.
func TestConcurrentReaders(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, Config{SegmentBytes: 2048, Sync: SyncNone})
	defer l.Close()
	const batches = 300
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for seq := uint64(1); seq <= batches; seq++ {
			if _, err := l.Append(testBatch(seq, batchLen(seq))); err != nil {
				t.Error(err)
				return
			}
			if seq%50 == 0 {
				if _, err := l.Prune(seq-20, 0, 1); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	reader := func(read func() error) {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := read(); err != nil {
				t.Error(err)
				return
			}
		}
	}
	replay := func() error {
		last := l.LastSeq()
		var prev uint64
		err := l.Replay(0, func(seq uint64, recs []Record) error {
			if prev != 0 && seq != prev+1 {
				return fmt.Errorf("Replay: seq %d after %d", seq, prev)
			}
			if !sameRecords(recs, testBatch(seq, batchLen(seq))) {
				return fmt.Errorf("Replay: batch %d differs", seq)
			}
			prev = seq
			return nil
		})
		if err == nil && prev < last {
			err = fmt.Errorf("Replay ended at %d, before LastSeq %d", prev, last)
		}
		return err
	}
	inspect := func() error {
		_, err := Inspect(dir, func(seq uint64, _ time.Time, recs []Record) error {
			if !sameRecords(recs, testBatch(seq, batchLen(seq))) {
				return fmt.Errorf("Inspect: batch %d differs", seq)
			}
			return nil
		})
		return err
	}
	segments := func() error {
		segs := l.Segments()
		for i := 1; i < len(segs); i++ {
			if segs[i].FirstSeq != segs[i-1].LastSeq+1 {
				return fmt.Errorf("Segments: gap in %+v", segs)
			}
		}
		return nil
	}
	wg.Add(3)
	go reader(replay)
	go reader(inspect)
	go reader(segments)
	wg.Wait()
	checkLast := l.LastSeq()
	if checkLast != batches {
		t.Fatalf("LastSeq = %d, want %d", checkLast, batches)
	}
}

// TestParseSyncPolicy reads the two names operators give and refuses others.
func TestParseSyncPolicy(t *testing.T) {
	for name, want := range map[string]SyncPolicy{"always": SyncEveryAppend, "none": SyncNone} {
		if got, err := ParseSyncPolicy(name); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", name, got, err, want)
		}
	}
	for _, bad := range []string{"", "sometimes", "Always", "every-append"} {
		if _, err := ParseSyncPolicy(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
