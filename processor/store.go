package processor

import (
	"context"
	"time"

	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/wal"
)

// Store is the ranking state the processor writes; sink.Redis implements it.
type Store interface {
	// Apply applies the rooms' updates under their watermarks, clears the
	// acknowledged pending outputs, and returns each room's state, in order.
	Apply(ctx context.Context, rooms []sink.RoomUpdate, acks []sink.Ack) ([]sink.RoomState, error)
	// Read returns rooms' states without changing them.
	Read(ctx context.Context, rooms []string) ([]sink.RoomState, error)
	// StoreStable stores new stable lists with a compare-and-set on seq.
	StoreStable(ctx context.Context, ups []sink.StableUpdate) ([]bool, error)
	Ping(ctx context.Context) error
}

// Log is the write-ahead log; wal.Log implements it.
type Log interface {
	// Append writes one batch durably and returns its sequence number.
	Append(recs []wal.Record) (uint64, error)
	// Prune removes old segments, never one holding a batch >= keepFrom.
	Prune(keepFrom uint64, maxAge time.Duration, maxBytes int64) (int, error)
}
