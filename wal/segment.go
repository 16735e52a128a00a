package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const (
	magic         = "RWAL"
	formatVersion = 1
	headerSize    = 20
	segmentExt    = ".wal"
	// nameDigits is the width of a segment name: a uint64 in hex.
	nameDigits = 16
)

// SegmentInfo describes one segment file.
type SegmentInfo struct {
	Path     string
	FirstSeq uint64 // the sequence in the file name
	LastSeq  uint64 // FirstSeq-1 when the segment holds no batch
	Bytes    int64  // header and complete frames
	Batches  int
}

// segment is what the log knows of one segment file.
type segment struct {
	path     string
	firstSeq uint64
	lastSeq  uint64 // firstSeq-1 while empty
	size     int64  // bytes of the header and the complete frames
	batches  int
	newest   int64 // latest append time of its batches, Unix ms
}

func (s *segment) info() SegmentInfo {
	return SegmentInfo{Path: s.path, FirstSeq: s.firstSeq, LastSeq: s.lastSeq, Bytes: s.size, Batches: s.batches}
}

// segmentName is the file name of the segment starting at seq.
func segmentName(seq uint64) string {
	return fmt.Sprintf("%016x%s", seq, segmentExt)
}

// parseSegmentName returns the first sequence named by a segment file name.
func parseSegmentName(name string) (uint64, bool) {
	hex, ok := strings.CutSuffix(name, segmentExt)
	if !ok || len(hex) != nameDigits || strings.ToLower(hex) != hex {
		return 0, false
	}
	seq, err := strconv.ParseUint(hex, 16, 64)
	if err != nil || seq == 0 {
		return 0, false
	}
	return seq, true
}

// listSegments returns the segments of dir, ordered by first sequence. Files
// whose names are not segment names are ignored.
func listSegments(fsys FS, dir string) ([]*segment, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: list %s: %w", dir, err)
	}
	var segs []*segment
	for _, e := range entries {
		seq, ok := parseSegmentName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		segs = append(segs, &segment{path: filepath.Join(dir, e.Name()), firstSeq: seq, lastSeq: seq - 1})
	}
	slices.SortFunc(segs, func(a, b *segment) int {
		switch {
		case a.firstSeq < b.firstSeq:
			return -1
		case a.firstSeq > b.firstSeq:
			return 1
		}
		return 0
	})
	return segs, nil
}

// appendHeader appends the header of the segment starting at first.
func appendHeader(dst []byte, first uint64) []byte {
	start := len(dst)
	dst = append(dst, magic...)
	dst = binary.LittleEndian.AppendUint16(dst, formatVersion)
	dst = binary.LittleEndian.AppendUint16(dst, 0)
	dst = binary.LittleEndian.AppendUint64(dst, first)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// errVersion reports a segment written in a format this build cannot read.
// It is never repaired.
type errVersion uint16

func (v errVersion) Error() string {
	return fmt.Sprintf("format version %d not supported (this build reads version %d)", uint16(v), formatVersion)
}

// decodeHeader checks a segment header and returns its first sequence.
func decodeHeader(b []byte) (uint64, error) {
	if len(b) < headerSize {
		return 0, errTruncated
	}
	if string(b[:4]) != magic {
		return 0, frameError("bad segment magic")
	}
	if crc32.Checksum(b[:16], castagnoli) != binary.LittleEndian.Uint32(b[16:]) {
		return 0, frameError("segment header checksum mismatch")
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != formatVersion {
		return 0, errVersion(v)
	}
	if f := binary.LittleEndian.Uint16(b[6:]); f != 0 {
		return 0, frameError(fmt.Sprintf("segment header flags %#x", f))
	}
	return binary.LittleEndian.Uint64(b[8:]), nil
}

// createSegment creates the segment starting at first, writes and fsyncs its
// header, fsyncs the directory, and returns the file open for appending.
//
// A file of that name left by an earlier attempt that failed (a write, an
// fsync or the directory fsync) is removed first: the log never lists a
// segment it has not finished creating, so such a file holds nothing. When
// an attempt fails, createSegment removes what it created, so that the next
// attempt makes (and fsyncs) the directory entry afresh instead of trusting
// an fsync that failed once.
func createSegment(fsys FS, dir string, first uint64) (File, string, error) {
	path := filepath.Join(dir, segmentName(first))
	if err := fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, path, fmt.Errorf("wal: remove unfinished segment %s: %w", path, err)
	}
	f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, path, fmt.Errorf("wal: create segment: %w", err)
	}
	fail := func(err error) (File, string, error) {
		f.Close()
		_ = fsys.Remove(path) // best effort; the next attempt removes it too
		return nil, path, err
	}
	if _, err := f.Write(appendHeader(nil, first)); err != nil {
		return fail(fmt.Errorf("wal: write header of %s: %w", path, err))
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("wal: fsync %s: %w", path, err))
	}
	if err := syncDir(fsys, dir); err != nil {
		return fail(err)
	}
	return f, path, nil
}

// syncDir fsyncs a directory, making file creations and removals in it
// durable.
func syncDir(fsys FS, dir string) error {
	d, err := fsys.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("wal: open directory: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("wal: fsync directory %s: %w", dir, err)
	}
	return nil
}

// readBufSize is the initial read buffer of a frameReader. Frames larger than
// it grow the buffer.
const readBufSize = 1 << 20

// frameReader reads the frames of one segment file up to a limit, through a
// buffer it reuses: the records it returns alias that buffer and are valid
// until the next call.
type frameReader struct {
	f     File
	limit int64  // bytes of the file that may be read
	pos   int64  // file offset of buf[r]
	buf   []byte // buf[r:w] holds file bytes pos..pos+w-r
	r, w  int
	recs  []Record
	in    interner
}

func newFrameReader(f File, limit int64, buf []byte) *frameReader {
	if cap(buf) < readBufSize {
		buf = make([]byte, readBufSize)
	}
	return &frameReader{f: f, limit: limit, buf: buf[:cap(buf)]}
}

// reset points the reader at another file, keeping its buffers.
func (fr *frameReader) reset(f File, limit int64) {
	fr.f, fr.limit, fr.pos, fr.r, fr.w = f, limit, 0, 0, 0
	fr.in = interner{} // topics are interned per segment read
}

// readHeader reads and checks the segment header.
func (fr *frameReader) readHeader() (uint64, error) {
	if err := fr.fill(headerSize); err != nil {
		return 0, err
	}
	first, err := decodeHeader(fr.buf[fr.r:fr.w])
	if err != nil {
		return 0, err
	}
	fr.advance(headerSize)
	return first, nil
}

// next decodes the frame at the reader's position. off is that position. err
// is io.EOF at the limit, errTruncated when the limit falls inside a frame, a
// frameError for a bad frame, or an I/O error.
func (fr *frameReader) next() (h frameHeader, recs []Record, off int64, err error) {
	off = fr.pos
	if fr.pos == fr.limit {
		return h, nil, off, io.EOF
	}
	if err := fr.fill(framePrefix); err != nil {
		return h, nil, off, err
	}
	n, err := frameLength(fr.buf[fr.r:fr.w])
	if err != nil {
		return h, nil, off, err
	}
	if err := fr.fill(n); err != nil {
		return h, nil, off, err
	}
	h, fr.recs, n, err = decodeFrame(fr.buf[fr.r:fr.w], fr.recs, &fr.in)
	if err != nil {
		return h, nil, off, err
	}
	fr.advance(n)
	return h, fr.recs, off, nil
}

func (fr *frameReader) advance(n int) {
	fr.r += n
	fr.pos += int64(n)
}

// fill makes buf[r:w] hold at least n bytes, or returns errTruncated when the
// limit comes first.
func (fr *frameReader) fill(n int) error {
	if fr.w-fr.r >= n {
		return nil
	}
	if fr.limit-fr.pos < int64(n) {
		return errTruncated
	}
	if len(fr.buf)-fr.r < n {
		if len(fr.buf) < n {
			nb := make([]byte, max(n, 2*len(fr.buf)))
			fr.w = copy(nb, fr.buf[fr.r:fr.w])
			fr.buf = nb
		} else {
			fr.w = copy(fr.buf, fr.buf[fr.r:fr.w])
		}
		fr.r = 0
	}
	// Read as much as the buffer takes, up to the limit.
	wpos := fr.pos + int64(fr.w-fr.r)
	m := int(min(int64(len(fr.buf)-fr.w), fr.limit-wpos))
	got, err := fr.f.ReadAt(fr.buf[fr.w:fr.w+m], wpos)
	fr.w += got
	if fr.w-fr.r >= n {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		// The file is shorter than the limit said: it was truncated under
		// us, which only a concurrent repair or an outside hand does.
		return errTruncated
	}
	return fmt.Errorf("wal: read %s: %w", fr.f.Name(), err)
}
