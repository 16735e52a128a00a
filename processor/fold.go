package processor

import (
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/ranking"
)

// folder folds a batch's events into one update per room, topic-partition
// and member. It is flat (one map from (room, partition, user) to an index
// into a slice) and reused from batch to batch, so once it has grown to the
// size of a typical batch, folding an event allocates nothing.
//
// The updates it builds point into its own memory: they are valid until the
// next reset, that is for the batch they belong to.
type folder struct {
	parts   []partKey
	partIdx map[partKey]int32
	rooms   []roomAcc
	roomIdx map[string]int32
	mems    []memberAcc
	memIdx  map[memberKey]int32
	last    map[[2]int32]int64 // (room, part) → offset of its last record

	updates []ranking.RoomUpdate
	partBuf []ranking.Part
	memBuf  []ranking.MemberUpdate
}

type partKey struct {
	topic string
	part  int32
}

type roomAcc struct {
	room  string
	ts    int64 // newest event time
	parts []int32
	// rec is 1 + the batch index of the room's newest record that carries
	// a traceparent (its output continues that trace, trace.go); 0: none
	rec int32
}

type memberKey struct {
	room, user string
	part       int32
}

type memberAcc struct {
	room, part int32
	user       string
	st         ranking.MemberState
}

func (f *folder) reset() {
	if f.partIdx == nil {
		f.partIdx = map[partKey]int32{}
		f.roomIdx = map[string]int32{}
		f.memIdx = map[memberKey]int32{}
		f.last = map[[2]int32]int64{}
	}
	clear(f.partIdx)
	clear(f.roomIdx)
	clear(f.memIdx)
	clear(f.last)
	for i := range f.rooms {
		f.rooms[i].parts = f.rooms[i].parts[:0]
	}
	f.parts, f.rooms, f.mems = f.parts[:0], f.rooms[:0], f.mems[:0]
}

// add folds the events of one record from topic/partition at offset; rec
// is 1 + its index in the batch when it carries a traceparent, else 0.
func (f *folder) add(topic string, partition int32, offset int64, rec int32, evs []codec.Event) {
	pk := partKey{topic, partition}
	pi, ok := f.partIdx[pk]
	if !ok {
		pi = int32(len(f.parts))
		f.parts = append(f.parts, pk)
		f.partIdx[pk] = pi
	}
	for i := range evs {
		ev := &evs[i]
		if !ev.Type.Meeting() {
			continue // board events are counted by the boards; ignored types by no one
		}
		ri, ok := f.roomIdx[ev.RoomID]
		if !ok {
			ri = int32(len(f.rooms))
			if len(f.rooms) < cap(f.rooms) {
				f.rooms = f.rooms[:ri+1]
				f.rooms[ri].room, f.rooms[ri].ts, f.rooms[ri].rec = ev.RoomID, 0, 0
			} else {
				f.rooms = append(f.rooms, roomAcc{room: ev.RoomID})
			}
			f.roomIdx[ev.RoomID] = ri
		}
		ra := &f.rooms[ri]
		lk := [2]int32{ri, pi}
		if _, seen := f.last[lk]; !seen {
			ra.parts = append(ra.parts, pi)
		}
		f.last[lk] = offset
		if rec != 0 {
			ra.rec = rec
		}
		if ev.TS > ra.ts {
			ra.ts = ev.TS
		}
		mk := memberKey{ev.RoomID, ev.UserID, pi}
		mi, ok := f.memIdx[mk]
		if !ok {
			mi = int32(len(f.mems))
			f.mems = append(f.mems, memberAcc{room: ri, part: pi, user: ev.UserID})
			f.memIdx[mk] = mi
		}
		f.mems[mi].st.Apply(ev)
	}
}

// build returns the folded updates, rooms in order of first appearance,
// parts in order of first appearance within the room.
func (f *folder) build() []ranking.RoomUpdate {
	// Slot every (room, part) pair, then place members into one shared
	// backing array so that the whole batch takes three slices.
	nPairs := 0
	for i := range f.rooms {
		nPairs += len(f.rooms[i].parts)
	}
	f.partBuf = grow(f.partBuf, nPairs)
	f.memBuf = grow(f.memBuf, len(f.mems))
	f.updates = grow(f.updates, len(f.rooms))
	pairAt := make(map[[2]int32]int32, nPairs) // (room, part) → index in partBuf
	n := int32(0)
	for ri := range f.rooms {
		ra := &f.rooms[ri]
		for _, pi := range ra.parts {
			pk := f.parts[pi]
			f.partBuf[n] = ranking.Part{Topic: pk.topic, Partition: pk.part, Last: f.last[[2]int32{int32(ri), pi}]}
			pairAt[[2]int32{int32(ri), pi}] = n
			n++
		}
	}
	// Count members per pair, then carve memBuf.
	counts := make([]int32, nPairs)
	for i := range f.mems {
		counts[pairAt[[2]int32{f.mems[i].room, f.mems[i].part}]]++
	}
	off := int32(0)
	for i := range f.partBuf[:nPairs] {
		f.partBuf[i].Members = f.memBuf[off : off : off+counts[i]]
		off += counts[i]
	}
	for i := range f.mems {
		m := &f.mems[i]
		p := &f.partBuf[pairAt[[2]int32{m.room, m.part}]]
		p.Members = append(p.Members, ranking.MemberUpdate{UserID: m.user, State: m.st})
	}
	n = 0
	for ri := range f.rooms {
		k := int32(len(f.rooms[ri].parts))
		f.updates[ri] = ranking.RoomUpdate{Room: f.rooms[ri].room, Parts: f.partBuf[n : n+k : n+k]}
		n += k
	}
	return f.updates[:len(f.rooms)]
}

// grow returns s with length n, reusing its memory when it is large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	clear(s[:n])
	return s[:n]
}
