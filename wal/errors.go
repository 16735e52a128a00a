package wal

import (
	"errors"
	"fmt"
)

var (
	// ErrLocked is returned by Open when another Log (in this process or
	// another) holds the directory.
	ErrLocked = errors.New("wal: directory is locked by another process")
	// ErrClosed is returned by Append, Replay and Prune after Close.
	ErrClosed = errors.New("wal: log is closed")
)

// CorruptionError reports a bad frame that valid data follows, or a break in
// the sequence of batches. rostrum never skips one silently: Open, Replay and
// Inspect fail with it and change nothing on disk.
type CorruptionError struct {
	Segment string // path of the segment file
	Offset  int64  // byte offset of the bad frame (0: the segment header)
	Reason  string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("wal: corrupt segment %s at offset %d: %s", e.Segment, e.Offset, e.Reason)
}
