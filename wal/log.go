package wal

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
)

// SyncPolicy says when Append makes a batch durable.
type SyncPolicy int

const (
	// SyncEveryAppend fsyncs the segment before Append returns (default).
	SyncEveryAppend SyncPolicy = iota
	// SyncNone leaves flushing to the operating system: a batch survives a
	// process crash but may be lost in a power loss. For tests, benchmarks and
	// the demo.
	SyncNone
)

func (p SyncPolicy) String() string {
	switch p {
	case SyncEveryAppend:
		return "every-append"
	case SyncNone:
		return "none"
	}
	return fmt.Sprintf("SyncPolicy(%d)", int(p))
}

// ParseSyncPolicy reads a policy by the name operators give it: "always"
// (SyncEveryAppend) or "none" (SyncNone).
func ParseSyncPolicy(name string) (SyncPolicy, error) {
	switch name {
	case "always":
		return SyncEveryAppend, nil
	case "none":
		return SyncNone, nil
	}
	return 0, fmt.Errorf("must be always or none, got %q", name)
}

// DefaultSegmentBytes is the default Config.SegmentBytes.
const DefaultSegmentBytes = 64 << 20

// maxKeptBuf is the largest frame buffer Append keeps for the next batch.
const maxKeptBuf = 16 << 20

// slowSync is the fsync duration above which Append logs a warning.
const slowSync = time.Second

// Config configures a Log. The zero value is ready to use.
type Config struct {
	// SegmentBytes is the size above which the log starts a new segment;
	// a frame never spans two segments, so a segment exceeds it only when
	// it holds a single batch larger than SegmentBytes. Default: 64 MiB.
	SegmentBytes int64
	// Sync says when a batch is fsynced. Default: SyncEveryAppend.
	Sync SyncPolicy
	// Logger receives open, repair, rotation, prune and slow-fsync events.
	// Default: zap.NewNop().
	Logger *zap.Logger
	// OnSync, if set, is called after every fsync of an Append with its
	// duration (for a latency histogram). It must be fast and not block.
	OnSync func(time.Duration)
	// FS is the file system the segments live on. Default: OSFS{}, the
	// operating system's. Tests pass one that injects disk faults.
	FS FS
}

// Validate checks the options.
func (o Config) Validate() error {
	if o.SegmentBytes < 0 {
		return fmt.Errorf("wal: SegmentBytes must not be negative, got %d", o.SegmentBytes)
	}
	if o.Sync != SyncEveryAppend && o.Sync != SyncNone {
		return fmt.Errorf("wal: unknown Sync policy %d", int(o.Sync))
	}
	return nil
}

func (o Config) withDefaults() Config {
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.FS == nil {
		o.FS = OSFS{}
	}
	return o
}

// Log is an open write-ahead log.
//
// Append, Prune and Close are serialized with one another (the log has one
// writer); Replay, LastSeq and Segments may run concurrently with them from
// other goroutines.
type Log struct {
	dir  string
	opts Config
	fs   FS
	log  *zap.Logger
	lock *os.File
	now  func() time.Time // append clock; tests replace it

	wmu sync.Mutex // serializes writers; guards the fields below
	f   File       // the active (last) segment, open for appending; nil until repaired after a failure
	buf []byte     // frame buffer reused by Append
	// broken is the failure (write, fsync, rotation) that left the active
	// segment in an unknown state; the next Append repairs it first.
	broken error

	mu      sync.Mutex // guards the fields below; held briefly
	segs    []*segment // oldest first; the last one is active
	lastSeq uint64
	closed  bool // written with wmu and mu held, read with either
}

// Open opens the log in dir, creating the directory and a first segment if
// needed. It takes an exclusive lock on dir/LOCK (ErrLocked when another Log
// holds it), reads and verifies every segment, truncates a torn tail of the
// last segment (logged at warn level), and fails with a *CorruptionError when
// a bad frame is followed by valid data, or sequences are not contiguous.
func Open(dir string, opts Config) (*Log, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if err := opts.FS.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("wal: create %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	l := &Log{dir: dir, opts: opts, fs: opts.FS, log: opts.Logger, lock: lock, now: time.Now}
	if err := l.open(); err != nil {
		lock.Close()
		return nil, err
	}
	return l, nil
}

func (l *Log) open() error {
	s := scanner{fs: l.fs, dir: l.dir, log: l.log, repair: true}
	segs, err := s.scan()
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		f, path, err := createSegment(l.fs, l.dir, 1)
		if err != nil {
			return err
		}
		l.f = f
		segs = []*segment{{path: path, firstSeq: 1, lastSeq: 0, size: headerSize}}
	} else {
		active := segs[len(segs)-1]
		f, err := l.fs.OpenFile(active.path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return fmt.Errorf("wal: open segment: %w", err)
		}
		l.f = f
	}
	l.segs = segs
	l.lastSeq = segs[len(segs)-1].lastSeq
	l.log.Info("wal: opened",
		zap.String("dir", l.dir),
		zap.Int("segments", len(segs)),
		zap.Uint64("first_seq", segs[0].firstSeq),
		zap.Uint64("last_seq", l.lastSeq),
		zap.Stringer("sync", l.opts.Sync))
	return nil
}

// Append writes recs as one frame, with a single write(2) and, with
// SyncEveryAppend, one fsync before it returns, and returns the batch's
// sequence number: 1 for the first batch ever, then one more per Append. The
// batch is in the log whole or not at all. An empty batch is a valid batch.
//
// A batch over 256 MiB encoded, or a topic over 65535 bytes, is refused
// without effect. When the write, the fsync or a rotation fails (a full
// disk, an I/O error), Append returns the error and the batch is not in the
// log: its sequence number is used by the next Append, which first repairs
// the active segment (see "Disk faults" in the package documentation) and
// then writes the whole frame again. Call Append again with the same batch
// to retry it. After Close, Append returns ErrClosed.
func (l *Log) Append(recs []Record) (seq uint64, err error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if l.broken != nil {
		if err := l.repair(); err != nil {
			return 0, err
		}
	}
	seq = l.lastSeq + 1
	appended := l.now().UnixMilli()
	buf, err := appendFrame(l.buf[:0], seq, appended, recs)
	if err != nil {
		return 0, err
	}
	if cap(buf) <= maxKeptBuf {
		l.buf = buf // keep the buffer, unless one huge batch grew it
	}
	active := l.segs[len(l.segs)-1]
	if active.batches > 0 && active.size+int64(len(buf)) > l.opts.SegmentBytes {
		if err := l.rotate(seq); err != nil {
			return 0, l.fail(err)
		}
		active = l.segs[len(l.segs)-1]
	}
	if _, err := l.f.Write(buf); err != nil {
		return 0, l.fail(fmt.Errorf("wal: append to %s: %w", active.path, err))
	}
	if l.opts.Sync == SyncEveryAppend {
		start := time.Now()
		if err := l.f.Sync(); err != nil {
			return 0, l.fail(fmt.Errorf("wal: fsync %s: %w", active.path, err))
		}
		d := time.Since(start)
		if l.opts.OnSync != nil {
			l.opts.OnSync(d)
		}
		if d > slowSync {
			l.log.Warn("wal: slow fsync", zap.String("segment", active.path), zap.Duration("took", d))
		}
	}
	l.mu.Lock()
	active.size += int64(len(buf))
	active.lastSeq = seq
	active.batches++
	active.newest = max(active.newest, appended)
	l.lastSeq = seq
	l.mu.Unlock()
	return seq, nil
}

// fail records that an Append failed after it may have changed the active
// segment, tries to repair the segment at once, and returns err. What stays
// unrepaired is repaired by the next Append before it writes.
func (l *Log) fail(err error) error {
	if l.broken == nil {
		l.log.Warn("wal: append failed; the frame will be written again after the segment is repaired", zap.Error(err))
	}
	l.broken = err
	if rerr := l.repair(); rerr != nil {
		l.log.Debug("wal: repair failed; retried on the next append", zap.Error(rerr))
	}
	return err
}

// repair brings the active segment back to what the log knows it holds,
// its header and its complete frames (active.size bytes), after a failed
// write, fsync or rotation. It never trusts the descriptor that failed: it
// closes it, opens the segment afresh, truncates it to active.size, which
// drops whatever part of the failed frame reached the file or the page
// cache, and fsyncs it. Only then may Append write again; the frame is
// written whole, on pages that the next fsync must write out, rather than
// fsyncing again pages the kernel may already have given up on.
func (l *Log) repair() error {
	active := l.segs[len(l.segs)-1]
	if l.f != nil {
		_ = l.f.Close() // its error is the failure being repaired
		l.f = nil
	}
	f, err := l.fs.OpenFile(active.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("wal: repair: open %s: %w", active.path, err)
	}
	if err := f.Truncate(active.size); err != nil {
		f.Close()
		return fmt.Errorf("wal: repair: truncate %s at %d: %w", active.path, active.size, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("wal: repair: fsync %s: %w", active.path, err)
	}
	l.f = f
	l.log.Info("wal: repaired the active segment after a failed append",
		zap.String("segment", active.path), zap.Int64("bytes", active.size), zap.NamedError("failure", l.broken))
	l.broken = nil
	return nil
}

// rotate closes the active segment, fsynced whatever the policy so that only
// the last segment can ever have a torn tail, and starts a new one at seq.
// When it fails the active segment stays the old one (closed when the
// failure came after its fsync; repair opens it again).
func (l *Log) rotate(seq uint64) error {
	old := l.segs[len(l.segs)-1]
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("wal: fsync %s: %w", old.path, err)
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("wal: close %s: %w", old.path, err)
	}
	f, path, err := createSegment(l.fs, l.dir, seq)
	if err != nil {
		return err
	}
	l.f = f
	l.mu.Lock()
	l.segs = append(l.segs, &segment{path: path, firstSeq: seq, lastSeq: seq - 1, size: headerSize})
	l.mu.Unlock()
	l.log.Debug("wal: rotated", zap.String("closed", old.path), zap.Int64("bytes", old.size), zap.String("segment", path))
	return nil
}

// Close fsyncs the active segment, closes it and releases the directory lock.
// Closing a closed Log does nothing.
func (l *Log) Close() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return nil
	}
	var errs []error
	if l.broken != nil {
		// Drop a partial or unsynced frame now rather than leave it to
		// the next Open; if the disk still fails, Open repairs the tail.
		if err := l.repair(); err != nil {
			errs = append(errs, err)
		}
	}
	if l.f != nil {
		if err := l.f.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("wal: fsync on close: %w", err))
		}
		if err := l.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("wal: close segment: %w", err))
		}
		l.f = nil
	}
	if err := l.lock.Close(); err != nil {
		errs = append(errs, fmt.Errorf("wal: release lock: %w", err))
	}
	l.mu.Lock()
	l.closed = true
	last := l.lastSeq
	l.mu.Unlock()
	l.log.Info("wal: closed", zap.String("dir", l.dir), zap.Uint64("last_seq", last))
	return errors.Join(errs...)
}

// LastSeq returns the sequence of the last appended batch, 0 for a log that
// never held one.
func (l *Log) LastSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastSeq
}

// Segments describes the segments of the log, oldest first; the last one is
// the active segment.
func (l *Log) Segments() []SegmentInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	infos := make([]SegmentInfo, len(l.segs))
	for i, s := range l.segs {
		infos[i] = s.info()
	}
	return infos
}
