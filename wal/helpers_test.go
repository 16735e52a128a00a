package wal

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// testBatch returns the records of batch seq: n records whose contents
// depend only on seq, so that a test (or a killed child process) can rebuild
// what any batch must hold.
func testBatch(seq uint64, n int) []Record {
	recs := make([]Record, n)
	topics := [...]string{"prod.callbacks.rtc", "prod.callbacks.client", "prod.callbacks.signal"}
	for i := range recs {
		k := int(seq)*31 + i
		recs[i] = Record{
			Topic:     topics[k%len(topics)],
			Partition: int32(k % 12),
			Offset:    int64(seq)*1000 + int64(i),
			Timestamp: time.UnixMilli(1763700000000 + int64(k)),
			Value:     fmt.Appendf(nil, `{"room_id":"r-%d","user_id":"u-%d","type":"volume","value":%d,"ts":%d}`, k%97, k, k%1000, 1763700000000+k),
		}
		if k%5 != 0 { // some records without a key
			recs[i].Key = fmt.Appendf(nil, "r-%d", k%97)
		}
	}
	return recs
}

// batchLen is how many records testBatch puts in batch seq.
func batchLen(seq uint64) int { return int(seq%4) + 1 }

// sameRecords reports whether two batches hold the same records as stored:
// timestamps compared in milliseconds, nil and empty keys alike.
func sameRecords(a, b []Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Topic != y.Topic || x.Partition != y.Partition || x.Offset != y.Offset ||
			x.Timestamp.UnixMilli() != y.Timestamp.UnixMilli() ||
			!bytes.Equal(x.Key, y.Key) || !bytes.Equal(x.Value, y.Value) {
			return false
		}
	}
	return true
}

func openTest(t testing.TB, dir string, opts Config) *Log {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(t)
	}
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return l
}

// appendBatches appends testBatch(seq, batchLen(seq)) for the next n seqs
// and returns the offset in its segment at which each frame starts.
func appendBatches(t testing.TB, l *Log, n int) []int64 {
	t.Helper()
	var offs []int64
	for range n {
		seq := l.LastSeq() + 1
		segs := l.Segments()
		got, err := l.Append(testBatch(seq, batchLen(seq)))
		if err != nil {
			t.Fatalf("Append(%d): %v", seq, err)
		}
		if got != seq {
			t.Fatalf("Append returned seq %d, want %d", got, seq)
		}
		after := l.Segments()
		if before := segs[len(segs)-1]; after[len(after)-1].Path == before.Path {
			offs = append(offs, before.Bytes)
		} else {
			offs = append(offs, headerSize)
		}
	}
	return offs
}

// checkBatches replays l and checks it holds exactly the test batches
// first..last.
func checkBatches(t testing.TB, l *Log, first, last uint64) {
	t.Helper()
	want := first
	err := l.Replay(0, func(seq uint64, recs []Record) error {
		if seq != want {
			return fmt.Errorf("replayed seq %d, want %d", seq, want)
		}
		if !sameRecords(recs, testBatch(seq, batchLen(seq))) {
			return fmt.Errorf("batch %d differs", seq)
		}
		want++
		return nil
	})
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	if want != last+1 {
		t.Fatalf("replay ended after seq %d, want %d", want-1, last)
	}
	if got := l.LastSeq(); got != last {
		t.Fatalf("LastSeq = %d, want %d", got, last)
	}
}

// copyDir copies the segment files of src into a new temporary directory.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if filepath.Ext(e.Name()) != segmentExt {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// fakeClock is a settable clock for append times.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }
