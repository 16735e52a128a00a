package wal_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/wal"
)

// The disk fault tests run the log on a testenv.Disk, which fails writes
// (half the bytes land, then ENOSPC), fsyncs (after overwriting the unsynced
// bytes with zeros, as a kernel that dropped the dirty pages leaves them),
// directory fsyncs, truncations and file creation on demand. In every case
// the failed batch must not be in the log, the same batch must go in whole
// once the disk works again, and the log must hold exactly the batches
// whose Append succeeded, live and after a reopen or a crash.

// diskBatch is batch seq of the disk tests: its records depend only on seq.
func diskBatch(seq uint64) []wal.Record {
	recs := make([]wal.Record, int(seq%5)+1)
	for i := range recs {
		recs[i] = wal.Record{
			Topic: "test.callbacks.rtc", Partition: int32(i % 3), Offset: int64(seq)*10 + int64(i),
			Timestamp: time.UnixMilli(1763700000000 + int64(seq)),
			Key:       fmt.Appendf(nil, "r-%d", seq%7),
			Value:     bytes.Repeat(fmt.Appendf(nil, `{"seq":%d,"i":%d}`, seq, i), 20),
		}
	}
	return recs
}

func openDisk(t *testing.T, dir string, d *testenv.Disk, opts wal.Config) *wal.Log {
	t.Helper()
	opts.FS = d
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	l, err := wal.Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return l
}

// appendOK appends the batches after the log's last one up to last.
func appendOK(t *testing.T, l *wal.Log, last uint64) {
	t.Helper()
	for seq := l.LastSeq() + 1; seq <= last; seq++ {
		got, err := l.Append(diskBatch(seq))
		if err != nil || got != seq {
			t.Fatalf("Append(%d) = %d, %v", seq, got, err)
		}
	}
}

// appendFails appends the next batch n times and requires every attempt to
// fail with want and to leave the log as it was.
func appendFails(t *testing.T, l *wal.Log, n int, want error) {
	t.Helper()
	last := l.LastSeq()
	for i := range n {
		if seq, err := l.Append(diskBatch(last + 1)); !errors.Is(err, want) {
			t.Fatalf("attempt %d: Append on a failing disk = %d, %v; want an error wrapping %v", i+1, seq, err, want)
		}
		if got := l.LastSeq(); got != last {
			t.Fatalf("attempt %d: LastSeq %d after a failed Append, want %d", i+1, got, last)
		}
	}
}

// holds requires the log to replay exactly batches 1..last.
func holds(t *testing.T, l *wal.Log, last uint64) {
	t.Helper()
	want := uint64(1)
	err := l.Replay(1, func(seq uint64, recs []wal.Record) error {
		if seq != want {
			return fmt.Errorf("replayed seq %d, want %d", seq, want)
		}
		exp := diskBatch(seq)
		if len(recs) != len(exp) {
			return fmt.Errorf("batch %d: %d records, want %d", seq, len(recs), len(exp))
		}
		for i := range recs {
			if recs[i].Offset != exp[i].Offset || !bytes.Equal(recs[i].Value, exp[i].Value) {
				return fmt.Errorf("batch %d record %d differs", seq, i)
			}
		}
		want++
		return nil
	})
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	if want != last+1 || l.LastSeq() != last {
		t.Fatalf("log holds batches up to %d (LastSeq %d), want %d", want-1, l.LastSeq(), last)
	}
}

// crashCopy copies the segment files of dir as they are now, as a crash of
// the process (not of the machine) would leave them, into a new directory.
func crashCopy(t *testing.T, dir string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".wal" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// fileSize is the size of the last segment on disk.
func fileSize(t *testing.T, l *wal.Log) (int64, int64) {
	t.Helper()
	segs := l.Segments()
	last := segs[len(segs)-1]
	st, err := os.Stat(last.Path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size(), last.Bytes
}

// TestDiskFullMidFrame fills the disk in the middle of a frame (half of the
// write lands, then ENOSPC), several attempts in a row. The log truncates
// the partial frame at once, refuses nothing it should not, and takes the
// same batch whole once there is space again.
func TestDiskFullMidFrame(t *testing.T) {
	dir := t.TempDir()
	d := testenv.NewDisk()
	l := openDisk(t, dir, d, wal.Config{})
	appendOK(t, l, 5)
	d.Fail(testenv.DiskWrite, syscall.ENOSPC, -1)
	appendFails(t, l, 3, syscall.ENOSPC)
	if got, want := fileSize(t, l); got != want {
		t.Fatalf("segment is %d bytes after the failed appends, want %d (the partial frame truncated)", got, want)
	}
	holds(t, l, 5)
	d.Heal()
	appendOK(t, l, 8)
	holds(t, l, 8)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openDisk(t, dir, d, wal.Config{})
	defer l.Close()
	holds(t, l, 8)
	if n := d.Hits(testenv.DiskWrite); n != 3 {
		t.Fatalf("%d writes failed, want 3", n)
	}
}

// TestDiskFullTornTailNeverAFrame fills the disk mid-frame while the disk
// also refuses the truncation that would drop the partial frame, so a torn
// tail stays in the active segment. Readers of the live log (Replay,
// Inspect) must end before it; a process crash at that moment must leave a
// log that opens with the tail truncated and holds exactly the acknowledged
// batches; and the live log, once the disk works, must repair the tail and
// go on.
func TestDiskFullTornTailNeverAFrame(t *testing.T) {
	dir := t.TempDir()
	d := testenv.NewDisk()
	l := openDisk(t, dir, d, wal.Config{})
	appendOK(t, l, 5)
	d.Fail(testenv.DiskWrite, syscall.ENOSPC, -1)
	d.Fail(testenv.DiskTruncate, syscall.EIO, -1)
	appendFails(t, l, 1, syscall.ENOSPC) // the write fails, then the repair after it
	appendFails(t, l, 1, syscall.EIO)    // the repair before the write fails
	if got, want := fileSize(t, l); got <= want {
		t.Fatalf("segment is %d bytes, want a torn tail after its %d bytes of frames", got, want)
	}
	holds(t, l, 5)
	segs, err := wal.Inspect(dir, nil)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	if last := segs[len(segs)-1].LastSeq; last != 5 {
		t.Fatalf("Inspect reads up to seq %d, want 5", last)
	}

	// A crash now: the copy opens with the torn tail truncated.
	crashed := crashCopy(t, dir)
	core, logs := observer.New(zapcore.WarnLevel)
	c, err := wal.Open(crashed, wal.Config{Logger: zap.New(core)})
	if err != nil {
		t.Fatalf("Open after a crash with a torn tail: %v", err)
	}
	holds(t, c, 5)
	if logs.FilterMessage("wal: truncated torn tail").Len() != 1 {
		t.Fatalf("torn tail not reported; logs: %v", logs.All())
	}
	appendOK(t, c, 6)
	c.Close()

	// The live log, once the disk works again.
	d.Heal()
	appendOK(t, l, 7)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openDisk(t, dir, d, wal.Config{})
	defer l.Close()
	holds(t, l, 7)
}

// TestFsyncFailure fails the fsync of an append. The disk then overwrites
// the frame's bytes with zeros (the kernel dropped the dirty pages), so a
// log that fsynced again and trusted the second answer would hold a hole
// where it acknowledged a batch. The log must instead drop the frame and
// write it again, whole, after the disk recovers: with the fsync failing
// once (the repair right after it succeeds) and with it failing for a while
// (the repair itself fails until the disk heals).
func TestFsyncFailure(t *testing.T) {
	for _, tc := range []struct {
		name  string
		times int
	}{{"once", 1}, {"until healed", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := testenv.NewDisk()
			l := openDisk(t, dir, d, wal.Config{Sync: wal.SyncEveryAppend})
			appendOK(t, l, 5)
			d.Fail(testenv.DiskSync, syscall.EIO, tc.times)
			appendFails(t, l, 1, syscall.EIO)
			if tc.times < 0 {
				appendFails(t, l, 2, syscall.EIO)
				holds(t, l, 5)
				// A crash while the disk fails: nothing past batch 5 may
				// be read back, and nothing before it is lost.
				c, err := wal.Open(crashCopy(t, dir), wal.Config{})
				if err != nil {
					t.Fatalf("Open after a crash: %v", err)
				}
				holds(t, c, 5)
				c.Close()
				d.Heal()
			}
			if got, want := fileSize(t, l); tc.times > 0 && got != want {
				t.Fatalf("segment is %d bytes after the repair, want %d", got, want)
			}
			appendOK(t, l, 9)
			holds(t, l, 9)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openDisk(t, dir, d, wal.Config{})
			defer l.Close()
			holds(t, l, 9)
			if d.Hits(testenv.DiskSync) == 0 {
				t.Fatal("no fsync failed")
			}
		})
	}
}

// TestSegmentCreationFailure fails the rotation to a new segment: the
// directory fsync after its creation, or the creation itself (no space for
// a file). The half-made segment must never count: the log keeps appending
// nothing until a segment is created whole, then holds every batch, live,
// after a reopen, and after a crash in the middle of the failures.
func TestSegmentCreationFailure(t *testing.T) {
	for _, tc := range []struct {
		op  testenv.DiskOp
		err error
	}{{testenv.DiskDirSync, syscall.EIO}, {testenv.DiskCreate, syscall.ENOSPC}} {
		t.Run(tc.op.String(), func(t *testing.T) {
			dir := t.TempDir()
			d := testenv.NewDisk()
			// Every segment holds one batch: each append rotates.
			opts := wal.Config{SegmentBytes: 64}
			l := openDisk(t, dir, d, opts)
			appendOK(t, l, 3)
			segs := len(l.Segments())
			d.Fail(tc.op, tc.err, -1)
			appendFails(t, l, 3, tc.err)
			if n := len(l.Segments()); n != segs {
				t.Fatalf("%d segments after failed rotations, want %d", n, segs)
			}
			holds(t, l, 3)
			c, err := wal.Open(crashCopy(t, dir), wal.Config{})
			if err != nil {
				t.Fatalf("Open after a crash: %v", err)
			}
			holds(t, c, 3)
			c.Close()
			d.Heal()
			appendOK(t, l, 6)
			holds(t, l, 6)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openDisk(t, dir, d, opts)
			defer l.Close()
			holds(t, l, 6)
			if n := len(l.Segments()); n != 6 {
				t.Fatalf("%d segments, want 6 (one batch each)", n)
			}
		})
	}
}
