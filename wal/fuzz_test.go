package wal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fuzzSeeds are the starting inputs of FuzzDecodeFrame, also kept in
// testdata/fuzz/FuzzDecodeFrame (written by go test -run TestFixture -update):
// whole frames, and frame bodies, which the fuzz function also tries sealed
// with a correct length and checksum.
func fuzzSeeds() [][]byte {
	frame := func(seq uint64, recs []Record) []byte {
		b, err := appendFrame(nil, seq, 1763700000000+int64(seq), recs)
		if err != nil {
			panic(err)
		}
		return b
	}
	one := []Record{{Topic: "prod.callbacks.rtc", Partition: 2, Offset: 7, Timestamp: time.UnixMilli(1763700000123),
		Key: []byte("r-1001"), Value: []byte(`{"room_id":"r-1001","user_id":"u-42","type":"volume","value":512,"ts":1763700000123}`)}}
	seeds := [][]byte{
		frame(1, nil),
		frame(2, one),
		frame(3, testBatch(3, 4)),
		frame(1<<40, []Record{{Partition: -1, Offset: -1, Timestamp: time.UnixMilli(-1)}}),
	}
	for _, s := range seeds[:3] {
		seeds = append(seeds, s[framePrefix:]) // the bodies
	}
	return seeds
}

// FuzzDecodeFrame checks that decoding arbitrary bytes never panics, only
// fails with errTruncated or a frameError, and that an accepted frame
// re-encodes to exactly the bytes it was decoded from.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
		// Most mutations break the checksum; sealing the bytes as a body
		// lets the fuzzer reach the record decoding too.
		checkDecode(t, seal(data))
	})
}

func checkDecode(t *testing.T, data []byte) {
	h, recs, n, err := decodeFrame(data, nil, &interner{})
	if err != nil {
		var fe frameError
		if !errors.Is(err, errTruncated) && !errors.As(err, &fe) {
			t.Fatalf("unexpected error type %T: %v", err, err)
		}
		return
	}
	if n < minFrame || n > len(data) {
		t.Fatalf("decoded a frame of %d bytes out of %d", n, len(data))
	}
	if int(h.count) != len(recs) {
		t.Fatalf("count %d, %d records", h.count, len(recs))
	}
	again, err := appendFrame(nil, h.seq, h.appended, recs)
	if err != nil {
		t.Fatalf("re-encoding a decoded frame: %v", err)
	}
	if !bytes.Equal(again, data[:n]) {
		t.Fatalf("re-encoded frame differs:\n got %x\nwant %x", again, data[:n])
	}
}

// FuzzOpenSegment puts arbitrary bytes after two good frames of the last
// segment and opens the log: Open must either repair it, keeping both frames,
// or report a *CorruptionError; never panic, never lose the good frames.
func FuzzOpenSegment(f *testing.F) {
	good := appendHeader(nil, 1)
	for seq := uint64(1); seq <= 2; seq++ {
		good, _ = appendFrame(good, seq, 0, testBatch(seq, 2))
	}
	f.Add([]byte{})
	f.Add(make([]byte, 64))
	for _, s := range fuzzSeeds()[:3] {
		f.Add(s)
	}
	third, _ := appendFrame(nil, 3, 0, testBatch(3, 1))
	f.Add(third)
	f.Add(append(bytes.Clone(third[:20]), third...))
	f.Fuzz(func(t *testing.T, tail []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, segmentName(1))
		if err := os.WriteFile(path, append(bytes.Clone(good), tail...), 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := Open(dir, Config{Sync: SyncNone})
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				t.Fatalf("Open: %v, want nil or a *CorruptionError", err)
			}
			return
		}
		defer l.Close()
		if l.LastSeq() < 2 {
			t.Fatalf("LastSeq %d: good frames lost", l.LastSeq())
		}
		if err := l.Replay(0, func(uint64, []Record) error { return nil }); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		if !bytes.HasPrefix(b, good) || int64(len(b)) != l.Segments()[0].Bytes {
			t.Fatalf("segment is %d bytes, log says %d", len(b), l.Segments()[0].Bytes)
		}
	})
}
