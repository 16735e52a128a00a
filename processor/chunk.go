package processor

import (
	"context"

	"github.com/rostrumhq/rostrum/ranking"
)

// chunkedStore caps the rooms written in one pipelined Redis round trip.
//
// A poll batch may touch any number of rooms (up to MaxPollRecords × events
// per record). One pipeline per batch is the fast path, but an unbounded one
// makes the request and reply buffers, and the time Redis spends on one
// client's pipeline, grow with the batch. Above max rooms the batch is
// applied in consecutive round trips of at most max rooms each, in order:
// every room is still applied by one atomic script under its watermarks,
// so splitting changes what is applied by nothing, and nothing is rejected.
type chunkedStore struct {
	Store
	max int
}

// chunked wraps s so that Apply, Read and StoreStable send at most max
// rooms per round trip.
func chunked(s Store, max int) *chunkedStore {
	return &chunkedStore{Store: s, max: max}
}

// inChunks calls do on consecutive chunks of at most max items, in order
// (first tells the first chunk), and returns the results one after the
// other. It stops at the first error; the chunks before it are done. Empty
// items still make one call.
func inChunks[T, R any](items []T, max int, do func(chunk []T, first bool) ([]R, error)) ([]R, error) {
	if len(items) <= max {
		return do(items, true)
	}
	out := make([]R, 0, len(items))
	for first := true; len(items) > 0; first = false {
		n := min(max, len(items))
		r, err := do(items[:n], first)
		if err != nil {
			return nil, err
		}
		out = append(out, r...)
		items = items[n:]
	}
	return out, nil
}

// Apply applies rooms in chunks; the acks go with the first chunk. An error
// (ErrRedisReset included) is returned as soon as a chunk reports it; the
// chunks before it are applied, which a retry of the batch skips through the
// watermarks.
func (c *chunkedStore) Apply(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack) ([]ranking.RoomState, error) {
	return inChunks(rooms, c.max, func(chunk []ranking.RoomUpdate, first bool) ([]ranking.RoomState, error) {
		return c.Store.Apply(ctx, chunk, firstOnly(acks, first))
	})
}

// ApplyMerge is Apply with the stable step taken within the apply where the
// store can (see mergingStore); a store that cannot merges nothing.
func (c *chunkedStore) ApplyMerge(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack, merge ranking.StableStep) ([]ranking.RoomState, []ranking.Merged, error) {
	ms, ok := c.Store.(mergingStore)
	if !ok {
		st, err := c.Apply(ctx, rooms, acks)
		return st, make([]ranking.Merged, len(st)), err
	}
	merged := make([]ranking.Merged, 0, len(rooms))
	states, err := inChunks(rooms, c.max, func(chunk []ranking.RoomUpdate, first bool) ([]ranking.RoomState, error) {
		st, m, err := ms.ApplyMerge(ctx, chunk, firstOnly(acks, first), merge)
		merged = append(merged, m...)
		return st, err
	})
	if err != nil {
		return nil, nil, err
	}
	return states, merged, nil
}

// firstOnly returns acks for the first chunk and none for the others.
func firstOnly(acks []ranking.Ack, first bool) []ranking.Ack {
	if first {
		return acks
	}
	return nil
}

// Read reads rooms in chunks.
func (c *chunkedStore) Read(ctx context.Context, rooms []string) ([]ranking.RoomState, error) {
	return inChunks(rooms, c.max, func(chunk []string, _ bool) ([]ranking.RoomState, error) {
		return c.Store.Read(ctx, chunk)
	})
}

// StoreStable stores the lists in chunks.
func (c *chunkedStore) StoreStable(ctx context.Context, ups []ranking.StableUpdate) ([]bool, error) {
	return inChunks(ups, c.max, func(chunk []ranking.StableUpdate, _ bool) ([]bool, error) {
		return c.Store.StoreStable(ctx, chunk)
	})
}

// Rebuild rebuilds rooms in chunks.
func (c *chunkedStore) Rebuild(ctx context.Context, rooms []ranking.RoomUpdate) error {
	for len(rooms) > 0 {
		n := min(c.max, len(rooms))
		if err := c.Store.Rebuild(ctx, rooms[:n]); err != nil {
			return err
		}
		rooms = rooms[n:]
	}
	return nil
}
