package processor

import (
	"context"
	"time"

	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/wal"
)

// Store is the ranking state the processor writes; sink.Store implements it.
type Store interface {
	// Apply applies the rooms' updates under their watermarks, clears the
	// acknowledged pending outputs, and returns each room's state, in order.
	Apply(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack) ([]ranking.RoomState, error)
	// Read returns rooms' states without changing them.
	Read(ctx context.Context, rooms []string) ([]ranking.RoomState, error)
	// StoreStable stores new stable lists with a compare-and-set on seq.
	StoreStable(ctx context.Context, ups []ranking.StableUpdate) ([]bool, error)
	Ping(ctx context.Context) error

	// EnsureGeneration returns Redis's generation marker, creating it if
	// missing; AdoptGeneration makes Apply report ErrRedisReset
	// (ranking.ErrRedisReset) when the marker differs.
	EnsureGeneration(ctx context.Context) (string, error)
	AdoptGeneration(gen string)
	// Rebuild applies updates ignoring watermarks (recovery; idempotent).
	Rebuild(ctx context.Context, rooms []ranking.RoomUpdate) error
	// RestoreStable seeds stable lists of rooms that have none.
	RestoreStable(ctx context.Context, seeds []ranking.PublishedList) (int, error)

	// The due set: rooms whose hysteresis must be stepped without events
	// (see ranking.DueRoom). DueRooms lists those due by until; SettleDue moves
	// the entries read to the next deadlines (0: removes them) unless they
	// changed meanwhile; DueStates reads the rooms' hysteresis states;
	// ArmDue enters deadlines, moving entries only earlier.
	DueRooms(ctx context.Context, until int64, max int) ([]ranking.DueRoom, error)
	// PeekDue returns the due set's earliest deadline as the last Apply saw
	// it (false: no Apply yet).
	PeekDue() (ranking.DuePeek, bool)
	SettleDue(ctx context.Context, rooms []ranking.DueRoom, next []int64) error
	DueStates(ctx context.Context, rooms []string) ([]string, error)
	ArmDue(ctx context.Context, rooms []ranking.DueRoom) error
}

// mergingStore is a Store that can take rooms' stable step within the
// apply (sink.Store.ApplyMerge): it calls merge with a room's state as the
// apply leaves it and stores the update in the same script, so those rooms
// need no StoreStable round trip.
type mergingStore interface {
	ApplyMerge(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack, merge ranking.StableStep) ([]ranking.RoomState, []ranking.Merged, error)
}

// WAL is the write-ahead log; wal.Log implements it.
type WAL interface {
	// Append writes one batch durably and returns its sequence number.
	Append(recs []wal.Record) (uint64, error)
	// Prune removes old segments, never one holding a batch >= keepFrom.
	Prune(keepFrom uint64, maxAge time.Duration, maxBytes int64) (int, error)
	// Replay calls fn for every retained batch with seq >= from, in order.
	Replay(from uint64, fn func(seq uint64, recs []wal.Record) error) error
	// Segments describes the retained segments (oldest first).
	Segments() []wal.SegmentInfo
}
