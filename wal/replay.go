package wal

import (
	"fmt"
	"io"
	"os"
	"time"
)

// Replay calls fn with every batch whose seq is >= from, in order, up to the
// last batch appended when Replay started. Batches that Prune removed are not
// there: when from is below the first kept seq (Segments()[0].FirstSeq),
// Replay starts at the first kept batch.
//
// The records passed to fn, their Key and Value slices included, are valid
// only during the call: copy what must outlive it. An error from fn stops the
// replay and is returned as is. A frame that no longer verifies (the disk
// changed under the log) gives a *CorruptionError.
//
// Replay may run concurrently with Append, Prune and other Replays: it reads
// its own file handles, so a segment pruned meanwhile stays readable.
func (l *Log) Replay(from uint64, fn func(seq uint64, recs []Record) error) error {
	segs, files, err := l.snapshot(from)
	if err != nil {
		return err
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var fr *frameReader
	for i, seg := range segs {
		if fr == nil {
			fr = newFrameReader(files[i], seg.size, nil)
		} else {
			fr.reset(files[i], seg.size)
		}
		if err := replaySegment(fr, seg, from, fn); err != nil {
			return err
		}
	}
	return nil
}

// snapshot copies the segments that hold batches >= from, as they are now,
// and opens them.
func (l *Log) snapshot(from uint64) ([]segment, []File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, nil, ErrClosed
	}
	var segs []segment
	var files []File
	for _, s := range l.segs {
		if s.batches == 0 || s.lastSeq < from {
			continue
		}
		f, err := l.fs.OpenFile(s.path, os.O_RDONLY, 0)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, nil, fmt.Errorf("wal: replay: %w", err)
		}
		segs = append(segs, *s)
		files = append(files, f)
	}
	return segs, files, nil
}

func replaySegment(fr *frameReader, seg segment, from uint64, fn func(uint64, []Record) error) error {
	corrupt := func(off int64, reason string) error {
		return &CorruptionError{Segment: seg.path, Offset: off, Reason: reason}
	}
	first, err := fr.readHeader()
	if err != nil {
		if isFrameErr(err) {
			return corrupt(0, "segment header: "+err.Error())
		}
		return err
	}
	if first != seg.firstSeq {
		return corrupt(0, fmt.Sprintf("header says the segment starts at seq %d, its name says %d", first, seg.firstSeq))
	}
	want := seg.firstSeq
	for {
		h, recs, off, err := fr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if isFrameErr(err) {
				return corrupt(off, err.Error())
			}
			return err
		}
		if h.seq != want {
			return corrupt(off, fmt.Sprintf("frame has seq %d, want %d", h.seq, want))
		}
		want++
		if h.seq < from {
			continue
		}
		if err := fn(h.seq, recs); err != nil {
			return err
		}
	}
	if want != seg.lastSeq+1 {
		return corrupt(seg.size, fmt.Sprintf("segment ends at seq %d, want %d", want-1, seg.lastSeq))
	}
	return nil
}

// Inspect reads the log in dir without taking its lock and without writing
// anything, calling fn (when not nil) with every batch in order, and returns
// the segments it read. It is meant for tools that look at the log of a
// running processor: a partial frame at the end of the last segment is simply
// where the log ends for now, and a segment pruned while Inspect runs is
// skipped. Corruption is reported as by Open, with a *CorruptionError. The
// records passed to fn are valid only during the call.
func Inspect(dir string, fn func(seq uint64, appended time.Time, recs []Record) error) ([]SegmentInfo, error) {
	s := scanner{fs: OSFS{}, dir: dir, fn: fn}
	segs, err := s.scan()
	if err != nil {
		return nil, err
	}
	infos := make([]SegmentInfo, len(segs))
	for i, seg := range segs {
		infos[i] = seg.info()
	}
	return infos, nil
}
