package wal

import (
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Prune deletes whole segments, oldest first, and returns how many it
// deleted. A segment goes when all its batches were appended more than maxAge
// ago, or, while the log's total size exceeds maxBytes, because it is the
// oldest. Zero maxAge or maxBytes disables that criterion.
//
// Prune never deletes the active segment, nor a segment holding a batch with
// seq >= keepFrom: pass the first seq not yet applied (everything before it
// is in Redis and committed), so that unapplied batches always stay
// replayable. It only deletes a prefix of the log, never leaving a gap.
func (l *Log) Prune(keepFrom uint64, maxAge time.Duration, maxBytes int64) (removed int, err error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	cutoff := l.now().Add(-maxAge).UnixMilli()

	l.mu.Lock()
	var total int64
	for _, s := range l.segs {
		total += s.size
	}
	for len(l.segs) > 1 {
		s := l.segs[0]
		if s.lastSeq >= keepFrom {
			break
		}
		old := maxAge > 0 && s.newest < cutoff
		big := maxBytes > 0 && total > maxBytes
		if !old && !big {
			break
		}
		// Removed under mu so that a Replay either sees the segment and
		// opens it first, or does not see it.
		if err = l.fs.Remove(s.path); err != nil {
			err = fmt.Errorf("wal: prune: %w", err)
			break
		}
		l.segs[0] = nil
		l.segs = l.segs[1:]
		total -= s.size
		removed++
	}
	first := l.segs[0].firstSeq
	l.mu.Unlock()

	if removed > 0 {
		if serr := syncDir(l.fs, l.dir); err == nil {
			err = serr
		}
		l.log.Info("wal: pruned", zap.Int("segments", removed), zap.Uint64("first_seq", first),
			zap.Int64("bytes", total), zap.Uint64("keep_from", keepFrom))
	}
	return removed, err
}
