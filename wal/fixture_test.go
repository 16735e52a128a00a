package wal

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/v1 and testdata/fuzz from the current code")

// fixtureDir holds a log written by format version 1. When the format
// changes, bump formatVersion, keep this directory and its test (every
// released version must keep opening), and add testdata/v2.
const fixtureDir = "testdata/v1"

const (
	fixtureBatches  = 12
	fixtureSegBytes = 2048
	fixtureT0       = 1763700000000 // Unix ms of batch 1
)

// fixtureBatch is what batch seq of the fixture holds. Never change it: the
// checked-in files are its output.
func fixtureBatch(seq uint64) []Record {
	recs := make([]Record, seq%4+1)
	topics := [...]string{"prod.callbacks.rtc", "prod.callbacks.client", "prod.callbacks.signal"}
	for i := range recs {
		k := int64(seq)*10 + int64(i)
		recs[i] = Record{
			Topic:     topics[k%3],
			Partition: int32(k % 6),
			Offset:    k,
			Timestamp: time.UnixMilli(fixtureT0 + k),
			Value:     fmt.Appendf(nil, `{"room_id":"r-%d","user_id":"u-%d","type":"volume","value":%d,"ts":%d}`, k%7, k, k%1000, fixtureT0+k),
		}
		if i%2 == 0 {
			recs[i].Key = fmt.Appendf(nil, "r-%d", k%7)
		}
	}
	return recs
}

func fixtureAppended(seq uint64) int64 { return fixtureT0 + int64(seq)*1000 }

// writeFixture writes the fixture log into dir.
func writeFixture(t *testing.T, dir string) {
	t.Helper()
	l, err := Open(dir, Config{SegmentBytes: fixtureSegBytes})
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= fixtureBatches; seq++ {
		l.now = func() time.Time { return time.UnixMilli(fixtureAppended(seq)) }
		if _, err := l.Append(fixtureBatch(seq)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, lockName)); err != nil {
		t.Fatal(err)
	}
}

func updateTestdata(t *testing.T) {
	old, _ := filepath.Glob(filepath.Join(fixtureDir, "*"+segmentExt))
	for _, p := range old {
		os.Remove(p)
	}
	if err := os.MkdirAll(fixtureDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFixture(t, fixtureDir)

	seedDir := filepath.Join("testdata", "fuzz", "FuzzDecodeFrame")
	if err := os.MkdirAll(seedDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range fuzzSeeds() {
		p := filepath.Join(seedDir, fmt.Sprintf("seed-%02d", i))
		if err := os.WriteFile(p, fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Log("rewrote", fixtureDir, "and", seedDir)
}

// TestFixture checks format compatibility: the checked-in version 1 log
// keeps opening and replaying to the records it was written with.
func TestFixture(t *testing.T) {
	if *update {
		updateTestdata(t)
	}

	// Read-only, in place.
	next := uint64(1)
	infos, err := Inspect(fixtureDir, func(seq uint64, appended time.Time, recs []Record) error {
		if seq != next {
			t.Fatalf("seq %d, want %d", seq, next)
		}
		if appended.UnixMilli() != fixtureAppended(seq) {
			t.Errorf("batch %d appended at %d, want %d", seq, appended.UnixMilli(), fixtureAppended(seq))
		}
		if !sameRecords(recs, fixtureBatch(seq)) {
			t.Errorf("batch %d: got %+v, want %+v", seq, recs, fixtureBatch(seq))
		}
		next++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next != fixtureBatches+1 || len(infos) < 2 {
		t.Fatalf("read %d batches in %d segments, want %d in several", next-1, len(infos), fixtureBatches)
	}

	// Opened for writing, in a copy.
	dir := copyDir(t, fixtureDir)
	l := openTest(t, dir, Config{SegmentBytes: fixtureSegBytes})
	next = 1
	if err := l.Replay(0, func(seq uint64, recs []Record) error {
		if seq != next || !sameRecords(recs, fixtureBatch(seq)) {
			t.Errorf("Replay: batch %d differs", seq)
		}
		next++
		return nil
	}); err != nil || next != fixtureBatches+1 {
		t.Fatalf("Replay: %v, read %d batches", err, next-1)
	}
	if seq, err := l.Append(fixtureBatch(fixtureBatches + 1)); err != nil || seq != fixtureBatches+1 {
		t.Fatalf("Append to the fixture: %d, %v", seq, err)
	}
	l.Close()

	// This build still writes version 1 byte for byte.
	if formatVersion == 1 {
		fresh := t.TempDir()
		writeFixture(t, fresh)
		want := snapshotDir(t, fixtureDir)
		got := snapshotDir(t, fresh)
		if !equalSnapshots(got, want) {
			t.Fatalf("the current encoder no longer writes the version 1 fixture: files %v, want %v",
				slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
	}
}
