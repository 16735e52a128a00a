package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"go.uber.org/zap"
)

// scanner reads all segments of a directory in order, verifying headers,
// checksums, frame bodies and the contiguity of sequences. Open uses it with
// repair set; Inspect without.
type scanner struct {
	fs  FS
	dir string
	log *zap.Logger
	// repair truncates a torn tail of the last segment and rewrites a torn
	// header. Without it the scanner never writes: a torn tail is the end.
	repair bool
	// fn, if set, is called with every batch in order.
	fn func(seq uint64, appended time.Time, recs []Record) error
}

// errVanished is a segment that was listed but is gone when opened: a Prune
// running while Inspect reads.
var errVanished = errors.New("segment vanished")

// scan returns the segments of the directory with what they hold.
func (s *scanner) scan() ([]*segment, error) {
	segs, err := listSegments(s.fs, s.dir)
	if err != nil {
		return nil, err
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	fr := newFrameReader(nil, 0, nil)
	out := segs[:0]
	var prev *segment
	for i, seg := range segs {
		err := s.scanSegment(fr, seg, prev, i == len(segs)-1)
		if errors.Is(err, errVanished) {
			prev = nil // segments vanish oldest first; start over after it
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, seg)
		prev = seg
	}
	return out, nil
}

func (s *scanner) scanSegment(fr *frameReader, seg, prev *segment, last bool) error {
	f, err := s.fs.OpenFile(seg.path, os.O_RDONLY, 0)
	if err != nil {
		if !s.repair && errors.Is(err, fs.ErrNotExist) {
			return errVanished
		}
		return fmt.Errorf("wal: open segment: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("wal: stat segment: %w", err)
	}
	size := st.Size()
	if prev != nil && seg.firstSeq != prev.lastSeq+1 {
		return &CorruptionError{Segment: seg.path, Offset: 0, Reason: fmt.Sprintf(
			"segment starts at seq %d but the previous segment ends at seq %d", seg.firstSeq, prev.lastSeq)}
	}

	fr.reset(f, size)
	first, err := fr.readHeader()
	if err != nil {
		if v := errVersion(0); errors.As(err, &v) {
			return fmt.Errorf("wal: segment %s: %w", seg.path, err)
		}
		return s.badFrame(f, seg, size, 0, err, last)
	}
	if first != seg.firstSeq {
		return &CorruptionError{Segment: seg.path, Offset: 0, Reason: fmt.Sprintf(
			"header says the segment starts at seq %d, its name says %d", first, seg.firstSeq)}
	}
	seg.size = headerSize
	for {
		h, recs, off, err := fr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return s.badFrame(f, seg, size, off, err, last)
		}
		if want := seg.lastSeq + 1; h.seq != want {
			return &CorruptionError{Segment: seg.path, Offset: off, Reason: fmt.Sprintf(
				"frame has seq %d, want %d", h.seq, want)}
		}
		if s.fn != nil {
			if err := s.fn(h.seq, time.UnixMilli(h.appended), recs); err != nil {
				return err
			}
		}
		seg.lastSeq = h.seq
		seg.batches++
		seg.size = fr.pos
		seg.newest = max(seg.newest, h.appended)
	}
}

// badFrame decides what a bad frame (or header, at offset 0) found at off
// is: corruption when it is not in the last segment or a valid frame follows
// it, a torn tail otherwise, which the scanner repairs or, read-only, treats
// as the end of the log.
func (s *scanner) badFrame(f File, seg *segment, size, off int64, cause error, last bool) error {
	if !isFrameErr(cause) {
		return cause // an I/O error: nothing to decide
	}
	reason := cause.Error()
	if off == 0 {
		reason = "segment header: " + reason
	}
	if !last {
		return &CorruptionError{Segment: seg.path, Offset: off, Reason: reason}
	}
	at, found, err := findValidFrame(f, off, size, seg.lastSeq)
	if err != nil {
		return err
	}
	if found {
		return &CorruptionError{Segment: seg.path, Offset: off, Reason: fmt.Sprintf(
			"%s, and a valid frame follows at offset %d", reason, at)}
	}
	if !s.repair {
		return nil // the tail being written, or a torn one Open will repair
	}
	if err := truncateSegment(s.fs, seg, off); err != nil {
		return err
	}
	s.log.Warn("wal: truncated torn tail",
		zap.String("segment", seg.path),
		zap.Int64("offset", off),
		zap.Int64("dropped_bytes", size-off),
		zap.String("reason", reason))
	seg.size = max(off, headerSize)
	return nil
}

// isFrameErr tells a bad frame from an I/O error.
func isFrameErr(err error) bool {
	var fe frameError
	return errors.Is(err, errTruncated) || errors.As(err, &fe)
}

// truncateSegment cuts a segment at off, rewriting its header when off is 0,
// and fsyncs it.
func truncateSegment(fsys FS, seg *segment, off int64) error {
	f, err := fsys.OpenFile(seg.path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("wal: repair %s: %w", seg.path, err)
	}
	defer f.Close()
	if err := f.Truncate(off); err != nil {
		return fmt.Errorf("wal: repair %s: truncate at %d: %w", seg.path, off, err)
	}
	if off == 0 {
		if _, err := f.WriteAt(appendHeader(nil, seg.firstSeq), 0); err != nil {
			return fmt.Errorf("wal: repair %s: rewrite header: %w", seg.path, err)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("wal: repair %s: fsync: %w", seg.path, err)
	}
	return nil
}

// searchWindow is how much of a segment findValidFrame reads at a time.
const searchWindow = 1 << 20

// findValidFrame looks in f, after the bad frame at from and before end, for
// a frame that decodes and whose checksum matches. To keep the search linear
// and its false positives negligible, a candidate's seq must be one that a
// real frame there could have: above lastSeq (the last good frame before
// from), and at most one more than the number of frames that fit in between.
func findValidFrame(f File, from, end int64, lastSeq uint64) (int64, bool, error) {
	buf := make([]byte, searchWindow+minFrame)
	var frame []byte
	var recs []Record
	for base := from + 1; end-base >= minFrame; base += searchWindow {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), end-base)], base)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, false, fmt.Errorf("wal: read %s: %w", f.Name(), err)
		}
		for i := 0; i < searchWindow && i+minFrame <= n; i++ {
			p := base + int64(i)
			size, err := frameLength(buf[i:])
			if err != nil || int64(size) > end-p {
				continue
			}
			seq := binary.LittleEndian.Uint64(buf[i+framePrefix:])
			if seq <= lastSeq || seq > lastSeq+1+uint64(p-from)/minFrame {
				continue
			}
			if cap(frame) < size {
				frame = make([]byte, size)
			}
			frame = frame[:size]
			if _, err := f.ReadAt(frame, p); err != nil {
				return 0, false, fmt.Errorf("wal: read %s: %w", f.Name(), err)
			}
			if _, recs, _, err = decodeFrame(frame, recs, nil); err == nil {
				return p, true, nil
			}
		}
	}
	return 0, false, nil
}
