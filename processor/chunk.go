package processor

import (
	"context"

	"github.com/rostrumhq/rostrum/sink"
)

// chunkedStore caps the rooms written in one pipelined Redis round trip,
// and collects the members refused by the room members cap (members.go).
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
	max     int
	refused refusals // collected by Apply until taken
}

// chunked wraps s so that Apply, Read and StoreStable send at most max
// rooms per round trip.
func chunked(s Store, max int) *chunkedStore {
	return &chunkedStore{Store: s, max: max}
}

// Apply applies rooms in chunks; the acks go with the first chunk. An error
// (ErrRedisReset included) is returned as soon as a chunk reports it; the
// chunks before it are applied, which a retry of the batch skips through the
// watermarks.
func (c *chunkedStore) Apply(ctx context.Context, rooms []sink.RoomUpdate, acks []sink.Ack) ([]sink.RoomState, error) {
	if len(rooms) <= c.max {
		st, err := c.Store.Apply(ctx, rooms, acks)
		c.refused.add(st)
		return st, err
	}
	out := make([]sink.RoomState, 0, len(rooms))
	for len(rooms) > 0 {
		n := min(c.max, len(rooms))
		st, err := c.Store.Apply(ctx, rooms[:n], acks)
		if err != nil {
			return nil, err
		}
		c.refused.add(st)
		out = append(out, st...)
		rooms, acks = rooms[n:], nil
	}
	return out, nil
}

// ApplyMerge is Apply with the stable step taken within the apply where the
// store can (see mergingStore); a store that cannot merges nothing.
func (c *chunkedStore) ApplyMerge(ctx context.Context, rooms []sink.RoomUpdate, acks []sink.Ack, merge sink.Merge) ([]sink.RoomState, []sink.Merged, error) {
	ms, ok := c.Store.(mergingStore)
	if !ok {
		st, err := c.Apply(ctx, rooms, acks)
		return st, make([]sink.Merged, len(st)), err
	}
	states := make([]sink.RoomState, 0, len(rooms))
	merged := make([]sink.Merged, 0, len(rooms))
	for first := true; first || len(rooms) > 0; first = false {
		n := min(c.max, len(rooms))
		st, m, err := ms.ApplyMerge(ctx, rooms[:n], acks, merge)
		if err != nil {
			return nil, nil, err
		}
		c.refused.add(st)
		states, merged = append(states, st...), append(merged, m...)
		rooms, acks = rooms[n:], nil
	}
	return states, merged, nil
}

// Read reads rooms in chunks.
func (c *chunkedStore) Read(ctx context.Context, rooms []string) ([]sink.RoomState, error) {
	if len(rooms) <= c.max {
		return c.Store.Read(ctx, rooms)
	}
	out := make([]sink.RoomState, 0, len(rooms))
	for len(rooms) > 0 {
		n := min(c.max, len(rooms))
		st, err := c.Store.Read(ctx, rooms[:n])
		if err != nil {
			return nil, err
		}
		out = append(out, st...)
		rooms = rooms[n:]
	}
	return out, nil
}

// StoreStable stores the lists in chunks.
func (c *chunkedStore) StoreStable(ctx context.Context, ups []sink.StableUpdate) ([]bool, error) {
	if len(ups) <= c.max {
		return c.Store.StoreStable(ctx, ups)
	}
	out := make([]bool, 0, len(ups))
	for len(ups) > 0 {
		n := min(c.max, len(ups))
		st, err := c.Store.StoreStable(ctx, ups[:n])
		if err != nil {
			return nil, err
		}
		out = append(out, st...)
		ups = ups[n:]
	}
	return out, nil
}

// Rebuild rebuilds rooms in chunks.
func (c *chunkedStore) Rebuild(ctx context.Context, rooms []sink.RoomUpdate) error {
	for len(rooms) > 0 {
		n := min(c.max, len(rooms))
		if err := c.Store.Rebuild(ctx, rooms[:n]); err != nil {
			return err
		}
		rooms = rooms[n:]
	}
	return nil
}
