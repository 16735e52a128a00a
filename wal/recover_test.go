package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// crashLog is a closed log of four batches, written either into one segment
// or with the last batch alone in a second segment.
type crashLog struct {
	dir   string
	offs  []int64 // offset of each frame in its segment
	last  string  // path of the last segment
	data  []byte  // contents of the last segment
	start int64   // offset of the last frame in it
	// firstSize is the size of the first segment.
	firstSize int64
}

func newCrashLog(t *testing.T, rotateLast bool) crashLog {
	t.Helper()
	dir := t.TempDir()
	l := openTest(t, dir, Config{})
	offs := appendBatches(t, l, 3)
	if rotateLast {
		// Force the fourth frame into a new segment.
		l.opts.SegmentBytes = l.Segments()[0].Bytes
	}
	offs = append(offs, appendBatches(t, l, 1)...)
	segs := l.Segments()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if rotateLast && len(segs) != 2 {
		t.Fatalf("got %d segments, want 2", len(segs))
	}
	last := segs[len(segs)-1].Path
	data, err := os.ReadFile(last)
	if err != nil {
		t.Fatal(err)
	}
	return crashLog{dir: dir, offs: offs, last: last, data: data, start: offs[3], firstSize: segs[0].Bytes}
}

// withLast copies the log into a new directory with the last segment's
// contents replaced, and returns the directory and that segment's path.
func (c crashLog) withLast(t *testing.T, data []byte) (string, string) {
	t.Helper()
	dir := copyDir(t, c.dir)
	path := filepath.Join(dir, filepath.Base(c.last))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

// reopenRepaired opens a damaged log, expects the last batch gone and the
// three before it intact, then appends batch 4 again and checks it reads back,
// also after another reopen.
func reopenRepaired(t *testing.T, dir string) {
	t.Helper()
	l := openTest(t, dir, Config{})
	checkBatches(t, l, 1, 3)
	appendBatches(t, l, 1)
	checkBatches(t, l, 1, 4)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTest(t, dir, Config{})
	checkBatches(t, l, 1, 4)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRepairTruncatedLastFrame(t *testing.T) {
	for _, rotate := range []bool{false, true} {
		name := "one segment"
		if rotate {
			name = "last frame alone in a new segment"
		}
		t.Run(name, func(t *testing.T) {
			c := newCrashLog(t, rotate)
			from := c.start
			if rotate {
				from = 0 // also every cut inside the new segment's header
			}
			for cut := from; cut < int64(len(c.data)); cut++ {
				dir, path := c.withLast(t, c.data[:cut])
				reopenRepaired(t, dir)
				if cut < c.start {
					continue
				}
				// The repaired segment was cut exactly at the frame start
				// before batch 4 was appended again.
				b, _ := os.ReadFile(path)
				if !bytes.Equal(b[:c.start], c.data[:c.start]) {
					t.Fatalf("cut at %d: bytes before the torn frame changed", cut)
				}
			}
		})
	}
}

func TestRepairFlippedBitInLastFrame(t *testing.T) {
	c := newCrashLog(t, false)
	// Every bit of the fixed fields, then one bit of every other byte.
	var bits []int64
	for off := c.start; off < int64(len(c.data)); off++ {
		if off < c.start+minFrame {
			for b := range int64(8) {
				bits = append(bits, off*8+b)
			}
		} else {
			bits = append(bits, off*8+off%8)
		}
	}
	for _, bit := range bits {
		data := bytes.Clone(c.data)
		data[bit/8] ^= 1 << (bit % 8)
		dir, path := c.withLast(t, data)
		l := openTest(t, dir, Config{})
		checkBatches(t, l, 1, 3)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if st, _ := os.Stat(path); st.Size() != c.start {
			t.Fatalf("bit %d: segment is %d bytes after repair, want %d", bit, st.Size(), c.start)
		}
	}
}

func TestRepairTail(t *testing.T) {
	c := newCrashLog(t, false)
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	frame1 := c.data[c.offs[0]:c.offs[1]]
	tests := []struct {
		name string
		tail []byte
	}{
		{"zeros after a power loss", make([]byte, 4096)},
		{"one zero byte", []byte{0}},
		{"garbage byte", garbage(1)},
		{"garbage", garbage(100)},
		{"much garbage", garbage(1 << 16)},
		{"0xff", bytes.Repeat([]byte{0xff}, 512)},
		{"a partial copy of an earlier frame", frame1[:len(frame1)-1]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, path := c.withLast(t, append(bytes.Clone(c.data), tt.tail...))
			core, logs := observer.New(zapcore.WarnLevel)
			l, err := Open(dir, Config{Logger: zap.New(core)})
			if err != nil {
				t.Fatal(err)
			}
			checkBatches(t, l, 1, 4)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if !bytes.Equal(got, c.data) {
				t.Fatalf("segment is %d bytes after repair, want the original %d", len(got), len(c.data))
			}
			entries := logs.FilterMessage("wal: truncated torn tail").All()
			if len(entries) != 1 {
				t.Fatalf("%d repair log entries, want 1", len(entries))
			}
			fields := entries[0].ContextMap()
			if fields["segment"] != path || fields["offset"] != int64(len(c.data)) || fields["dropped_bytes"] != int64(len(tt.tail)) {
				t.Fatalf("repair logged %v", fields)
			}
		})
	}
}

func TestOpenEmptyNewSegment(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"zero bytes", nil},
		{"header only", appendHeader(nil, 4)},
		{"partial header", appendHeader(nil, 4)[:7]},
		{"zeroed header", make([]byte, headerSize)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openTest(t, dir, Config{})
			appendBatches(t, l, 3)
			l.Close()
			path := filepath.Join(dir, segmentName(4))
			if err := os.WriteFile(path, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			l = openTest(t, dir, Config{})
			checkBatches(t, l, 1, 3)
			segs := l.Segments()
			if len(segs) != 2 || segs[1].Path != path || segs[1].Batches != 0 || segs[1].LastSeq != 3 || segs[1].Bytes != headerSize {
				t.Fatalf("segments %+v", segs)
			}
			appendBatches(t, l, 2)
			l.Close()
			l = openTest(t, dir, Config{})
			defer l.Close()
			checkBatches(t, l, 1, 5)
			if segs := l.Segments(); len(segs) != 2 || segs[1].Batches != 2 {
				t.Fatalf("segments %+v", segs)
			}
		})
	}
}

// corrupt describes a damage done to a closed log and where Open must
// report it.
type corrupt struct {
	name    string
	damage  func(t *testing.T, dir string, c crashLog)
	segment func(dir string) string
	offset  func(c crashLog) int64
	reason  string
}

func flipAt(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x20
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOpenReportsCorruption(t *testing.T) {
	seg1 := func(dir string) string { return filepath.Join(dir, segmentName(1)) }
	seg4 := func(dir string) string { return filepath.Join(dir, segmentName(4)) }
	frame := func(i int, delta int64) func(*testing.T, string, crashLog) {
		return func(t *testing.T, dir string, c crashLog) { flipAt(t, seg1(dir), c.offs[i]+delta) }
	}
	at := func(i int) func(crashLog) int64 { return func(c crashLog) int64 { return c.offs[i] } }
	zero := func(crashLog) int64 { return 0 }

	// One segment holding all four frames.
	single := []corrupt{
		{"length of frame 2", frame(1, 0), seg1, at(1), ""},
		{"length of frame 2, high byte", frame(1, 3), seg1, at(1), "out of range"},
		{"checksum of frame 2", frame(1, 4), seg1, at(1), "checksum mismatch"},
		{"seq of frame 2", frame(1, 8), seg1, at(1), "checksum mismatch"},
		{"body of frame 2", frame(1, 40), seg1, at(1), "checksum mismatch"},
		{"first frame", frame(0, 30), seg1, at(0), "checksum mismatch"},
		{"frame 3, the one before the last", frame(2, 12), seg1, at(2), "a valid frame follows"},
		{"header", func(t *testing.T, dir string, c crashLog) { flipAt(t, seg1(dir), 10) }, seg1, zero, "segment header"},
	}
	// The fourth frame alone in a second segment.
	rotated := []corrupt{
		{"last frame of a full segment", frame(2, 30), seg1, at(2), "checksum mismatch"},
		{"tail of a full segment cut", func(t *testing.T, dir string, c crashLog) {
			if err := os.Truncate(seg1(dir), c.offs[2]+5); err != nil {
				t.Fatal(err)
			}
		}, seg1, at(2), "truncated frame"},
		{"zeros after a full segment", func(t *testing.T, dir string, c crashLog) {
			f, _ := os.OpenFile(seg1(dir), os.O_WRONLY|os.O_APPEND, 0)
			f.Write(make([]byte, 100))
			f.Close()
		}, seg1, func(c crashLog) int64 { return c.firstSize }, "out of range"},
		{"header of a full segment", func(t *testing.T, dir string, c crashLog) { flipAt(t, seg1(dir), 2) }, seg1, zero, "segment header"},
		{"header of the last segment", func(t *testing.T, dir string, c crashLog) { flipAt(t, seg4(dir), 3) }, seg4, zero, "a valid frame follows at offset 20"},
		{"missing segment", func(t *testing.T, dir string, c crashLog) {
			os.Rename(seg4(dir), filepath.Join(dir, segmentName(5)))
		}, func(dir string) string { return filepath.Join(dir, segmentName(5)) }, zero, "segment starts at seq 5 but the previous segment ends at seq 3"},
		{"header names another seq", func(t *testing.T, dir string, c crashLog) {
			b, _ := os.ReadFile(seg4(dir))
			copy(b, appendHeader(nil, 9))
			os.WriteFile(seg4(dir), b, 0o644)
		}, seg4, zero, "header says the segment starts at seq 9"},
		{"frame from another place", func(t *testing.T, dir string, c crashLog) {
			// A well-formed frame with an unexpected seq is never taken as a torn tail.
			b, _ := os.ReadFile(seg4(dir))
			f, _ := appendFrame(nil, 7, 0, nil)
			os.WriteFile(seg4(dir), append(b, f...), 0o644)
		}, seg4, func(c crashLog) int64 { return int64(len(c.data)) }, "frame has seq 7, want 5"},
	}
	run := func(t *testing.T, rotate bool, tests []corrupt) {
		c := newCrashLog(t, rotate)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				dir := copyDir(t, c.dir)
				tt.damage(t, dir, c)
				before := snapshotDir(t, dir)
				l, err := Open(dir, Config{})
				if err == nil {
					l.Close()
					t.Fatal("Open succeeded, want a *CorruptionError")
				}
				var ce *CorruptionError
				if !errors.As(err, &ce) {
					t.Fatalf("err = %v, want a *CorruptionError", err)
				}
				if ce.Segment != tt.segment(dir) || ce.Offset != tt.offset(c) || !strings.Contains(ce.Reason, tt.reason) {
					t.Fatalf("got %v; want segment %s, offset %d, reason with %q", err, tt.segment(dir), tt.offset(c), tt.reason)
				}
				if after := snapshotDir(t, dir); !equalSnapshots(before, after) {
					t.Fatal("a failed Open changed the segments")
				}
				if _, err := Inspect(dir, nil); !errors.As(err, &ce) {
					t.Fatalf("Inspect: err = %v, want a *CorruptionError", err)
				}
			})
		}
	}
	t.Run("one segment", func(t *testing.T) { run(t, false, single) })
	t.Run("two segments", func(t *testing.T) { run(t, true, rotated) })
}

func TestOpenRefusesNewerVersion(t *testing.T) {
	for _, rotate := range []bool{false, true} {
		c := newCrashLog(t, rotate)
		dir := copyDir(t, c.dir)
		path := filepath.Join(dir, filepath.Base(c.last))
		b, _ := os.ReadFile(path)
		binary.LittleEndian.PutUint16(b[4:], 2)
		binary.LittleEndian.PutUint32(b[16:], crc32.Checksum(b[:16], castagnoli))
		os.WriteFile(path, b, 0o644)
		l, err := Open(dir, Config{})
		if err == nil {
			l.Close()
			t.Fatal("Open succeeded")
		}
		var ce *CorruptionError
		if errors.As(err, &ce) || !strings.Contains(err.Error(), "format version 2 not supported") {
			t.Fatalf("err = %v, want an unsupported version", err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, b) {
			t.Fatal("Open changed a segment of a newer version")
		}
	}
}

func TestInspect(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{t: time.UnixMilli(1763700000000)}
	l := openTest(t, dir, Config{SegmentBytes: 512})
	l.now = clock.now
	for range 10 {
		appendBatches(t, l, 1)
		clock.t = clock.t.Add(time.Second)
	}
	want := l.Segments()

	// With the log open and locked.
	next := uint64(1)
	infos, err := Inspect(dir, func(seq uint64, appended time.Time, recs []Record) error {
		if seq != next || !sameRecords(recs, testBatch(seq, batchLen(seq))) {
			t.Errorf("batch %d: got seq %d or other records", next, seq)
		}
		if w := int64(1763700000000 + (seq-1)*1000); appended.UnixMilli() != w {
			t.Errorf("batch %d appended at %d, want %d", seq, appended.UnixMilli(), w)
		}
		next++
		return nil
	})
	if err != nil || next != 11 {
		t.Fatalf("Inspect: %v, read up to seq %d", err, next-1)
	}
	if len(want) < 3 || !slices.Equal(infos, want) {
		t.Fatalf("Inspect segments %+v, want %+v", infos, want)
	}

	// A torn tail is the end, and stays as it is.
	last := want[len(want)-1]
	if err := os.Truncate(last.Path, last.Bytes-3); err != nil {
		t.Fatal(err)
	}
	before := snapshotDir(t, dir)
	infos, err = Inspect(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := infos[len(infos)-1]; got.LastSeq != 9 || got.Bytes >= last.Bytes {
		t.Fatalf("last segment read as %+v", got)
	}
	if !equalSnapshots(before, snapshotDir(t, dir)) {
		t.Fatal("Inspect changed the segments")
	}

	// An error from fn stops it.
	stop := errors.New("stop")
	if _, err := Inspect(dir, func(uint64, time.Time, []Record) error { return stop }); err != stop {
		t.Fatalf("Inspect returned %v, want fn's error", err)
	}
	l.Close()
}

func snapshotDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if filepath.Ext(e.Name()) != segmentExt {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = b
	}
	return m
}

func equalSnapshots(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}
