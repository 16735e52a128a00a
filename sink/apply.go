package sink

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/internal/redisscript"
	"github.com/rostrumhq/rostrum/ranking"
)

// Apply writes the rooms' updates, each room atomically in a script guarded
// by its watermarks and state token, and clears the pending marks of acks.
// It returns one RoomState per room, in order. The first round trip peeks
// at the due set's earliest entry too (see PeekDue).
//
// Every room is planned in Go (see roomModel) and written by fastLua. A
// room whose member states the sink holds (see stateCache) is planned at
// once and costs one round trip; the others, and any room that another
// writer changed since, are read first (loadLua) and planned in the next
// round trip.
//
// Every round trip reads the generation marker after its room scripts (and
// again after any of them that ran again, see generationLua); when a read
// differs from the adopted marker, Apply returns ranking.ErrRedisReset (see
// there) and no state. A marker read before the scripts would vouch only
// for the data set as it was then: a script run after Redis came back empty
// (a later round trip, or a call run again after NOSCRIPT) would return a
// room with no stable list and seq 0, whose next list would be stored and
// published as seq 1 again before the rebuild seeded the seqs from the
// output topic.
func (r *Store) Apply(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack) ([]ranking.RoomState, error) {
	states, _, err := r.ApplyMerge(ctx, rooms, acks, nil)
	return states, err
}

// ApplyMerge is Apply, where the rooms whose plan can take the stable step
// (see roomModel.plan) are merged (merge is called with the state the
// apply will leave) and their updates stored by the apply's own script:
// one script per room instead of two. merged[i].Done tells which rooms. A
// merged update's Due is entered in the due set in the same round trip.
func (r *Store) ApplyMerge(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack, merge ranking.StableStep) (states []ranking.RoomState, merged []ranking.Merged, err error) {
	run := newApplyRun(rooms, acks, merge, false)
	if err := r.apply(ctx, run); err != nil {
		return nil, nil, err
	}
	return run.states, run.merged, nil
}

// Rebuild applies rooms' updates while rebuilding lost state: parts at or
// below a watermark are applied too (the batch in hand may already have
// raised a watermark past older batches that still need applying). Member
// registers merge idempotently, so re-applying is harmless for the meeting
// ranking. Watermarks only ever rise.
func (r *Store) Rebuild(ctx context.Context, rooms []ranking.RoomUpdate) error {
	r.forget(rooms)
	return r.apply(ctx, newApplyRun(rooms, nil, nil, true))
}

// maxTrips bounds an apply's round trips. A room takes at most two (read,
// then write) unless another writer changes it between the two, or the
// apply holds it more than once; past the bound, the apply fails and the
// processor tries the batch again.
const maxTrips = 8

// applyRun is one apply's progress over its round trips.
type applyRun struct {
	rooms []ranking.RoomUpdate
	acks  []ranking.Ack // not yet sent
	merge ranking.StableStep
	force bool // Rebuild: apply parts at or below their watermarks too

	states []ranking.RoomState
	merged []ranking.Merged
	done   []bool // rooms applied
	left   int    // rooms not yet applied
	// prev[i] is the index of the apply's update of room i's room before
	// it (-1: none); nil when the apply holds no room twice.
	prev    []int
	loaded  []*loadedRoom // rooms read by the last round trip, by index (nil: none)
	read    []*loadedRoom // rooms read by this round trip
	partial bool          // a room was read in part: its entry goes at the apply's end
}

func newApplyRun(rooms []ranking.RoomUpdate, acks []ranking.Ack, merge ranking.StableStep, force bool) *applyRun {
	return &applyRun{rooms: rooms, acks: acks, merge: merge, force: force,
		states: make([]ranking.RoomState, len(rooms)), merged: make([]ranking.Merged, len(rooms)),
		done: make([]bool, len(rooms)), left: len(rooms), prev: earlier(rooms)}
}

// earlier returns, for each update of rooms, the index of the update of
// the same room before it (-1: none), or nil when no room is held twice
// (the processor's batches hold each room once).
func earlier(rooms []ranking.RoomUpdate) []int {
	if len(rooms) < 2 {
		return nil
	}
	last := make(map[string]int, len(rooms))
	var prev []int
	for i := range rooms {
		if j, ok := last[rooms[i].Room]; ok {
			if prev == nil {
				prev = make([]int, len(rooms))
				for k := range prev {
					prev[k] = -1
				}
			}
			prev[i] = j
		}
		last[rooms[i].Room] = i
	}
	return prev
}

// waits reports whether room i's update waits for an earlier update of its
// room in the apply, not yet applied: a room's updates are written one
// after the other, so that a later one's watermarks never skip an earlier
// one.
func (run *applyRun) waits(i int) bool {
	return run.prev != nil && run.prev[i] >= 0 && !run.done[run.prev[i]]
}

// apply plans and writes run's rooms, a round trip at a time, until every
// room is applied: each trip writes the rooms it could plan and reads the
// others, which the next trip plans from what it read.
func (r *Store) apply(ctx context.Context, run *applyRun) error {
	defer func() {
		if run.partial {
			r.cache.dropPartial(run.rooms)
		}
		r.cache.trim()
	}()
	var rolledBack error
	for trip := 1; trip == 1 || run.left > 0; trip++ { // the first one also for acks alone
		if trip > maxTrips {
			return r.failed(run.rooms, fmt.Errorf("sink: apply: %d rooms changed by another writer on each of %d round trips", run.left, maxTrips))
		}
		rb, err := r.roundTrip(ctx, run, trip == 1)
		if err != nil {
			if errors.Is(err, ranking.ErrRedisReset) {
				r.cache.clear() // after a data loss the whole cache is stale
			}
			return r.failed(run.rooms, err)
		}
		if rb != nil {
			rolledBack = rb
		}
		run.loaded, run.read = run.read, nil
	}
	if rolledBack != nil {
		// The apply ran fully (the rooms concerned were read and planned
		// again); the caller rebuilds what Redis lost.
		r.cache.clear()
		return rolledBack
	}
	return nil
}

// A round trip is sent in segments of consecutive rooms, each its own
// pipeline: a segment is planned and sent, and the next one is planned
// while Redis runs the ones before, so that the processor's work and
// Redis's overlap instead of adding up. Up to segmentsInFlight segments are
// in flight at once, on as many connections, so that Redis always has one
// to run while the processor writes the next one's arguments and reads the
// last one's replies. Each segment reads the generation marker after its
// scripts.
//
// Segments in flight together may run in Redis in any order: they hold
// different rooms, since a room the apply holds twice has its second update
// wait until the first is applied (applyRun.waits).
const (
	// segmentMin is the fewest rooms a segment holds: below it, a
	// segment's own cost (a pipeline's system calls, the marker's read
	// and a goroutine: tens of µs) is no longer small against its rooms'
	// (about 15-30 µs each).
	segmentMin = 64
	// segments is how many segments a round trip of many rooms is split
	// into: the first segment's planning and the last one's Redis time
	// are not overlapped, about 2/segments of the trip.
	segments = 16
	// segmentsInFlight bounds the segments sent and not yet answered.
	segmentsInFlight = 2
)

// segmentRooms returns the rooms per segment of a round trip of n rooms.
func (r *Store) segmentRooms(n int) int {
	if r.perSegment > 0 {
		return r.perSegment
	}
	return max(segmentMin, (n+segments-1)/segments)
}

// segment is the part of a round trip that one pipeline sends: the rooms
// lo..hi-1 of the apply (those of them not yet applied), and with the
// first segment of the first trip, the due set's peek; with the last, the
// acks that no planned room carries.
type segment struct {
	lo, hi int
	acks   []ranking.Ack
	peek   bool

	ar *arena // the plans and their arguments, released once landed

	t       applyTrip
	err     error
	replied chan struct{} // closed when t and err hold the reply
}

// roundTrip plans and sends one round trip of run, a segment at a time (see
// segmentsInFlight), and reads its replies: the planned rooms' states, the
// read rooms' records (into run.read). It returns ErrRedisRolledBack when
// a room showed that Redis went back in time (the trip still completes,
// and no later plan takes the stable step), and ranking.ErrRedisReset when
// a marker read differs from the adopted one.
func (r *Store) roundTrip(ctx context.Context, run *applyRun, first bool) (rolledBack, err error) {
	plans := make([]*fastPlan, len(run.rooms))
	var loads [][]any
	acks := newTripAcks(run.acks)
	run.acks = nil
	per := r.segmentRooms(run.left)
	r.trips.Add(1)
	var sent []*segment // sent, their replies not yet read, oldest first
	defer func() {
		for _, s := range sent {
			<-s.replied // nothing stays in flight after an error
		}
	}()
	for lo, k := 0, 0; k == 0 || lo < len(run.rooms); k++ { // one segment at least, for acks alone
		s := &segment{lo: lo, hi: run.next(lo, per), peek: first && k == 0, ar: arenas.Get().(*arena), replied: make(chan struct{})}
		if err := r.plan(run, s.lo, s.hi, plans, &loads, acks, s.ar); err != nil {
			return nil, err
		}
		last := s.hi == len(run.rooms)
		if last {
			s.acks = acks.rest()
		}
		var prev *segment
		if len(sent) == segmentsInFlight {
			prev = sent[0]
			<-prev.replied
			if prev.err != nil {
				return nil, prev.err
			}
			sent = sent[1:]
		}
		sent = append(sent, s)
		r.segments.Add(1)
		loads := loads // the next segment's plan may set it; it writes only other rooms' entries
		go func() {
			defer close(s.replied)
			s.t, s.err = r.sendSegment(ctx, run, s, plans, loads)
		}()
		if prev != nil {
			if err := r.landSegment(run, prev, plans, &rolledBack); err != nil {
				return nil, err
			}
		}
		lo = s.hi
	}
	for len(sent) > 0 {
		s := sent[0]
		<-s.replied
		sent = sent[1:]
		if s.err != nil {
			return nil, s.err
		}
		if err := r.landSegment(run, s, plans, &rolledBack); err != nil {
			return nil, err
		}
	}
	return rolledBack, nil
}

// TripStats returns how many round trips the applies have made, and the
// segments (pipelines) they were sent in.
func (r *Store) TripStats() (trips, segments int64) {
	return r.trips.Load(), r.segments.Load()
}

// next returns the end of the segment that starts at room lo and holds up
// to per rooms to plan or read: not yet applied, and not waiting.
func (run *applyRun) next(lo, per int) int {
	n := 0
	for i := lo; i < len(run.rooms); i++ {
		if !run.done[i] && !run.waits(i) {
			if n == per {
				return i
			}
			n++
		}
	}
	return len(run.rooms)
}

// landSegment reads a segment's replies (finishTrip) and checks the
// marker it read. It sets *rolledBack to ErrRedisRolledBack when a room
// showed that Redis went back in time.
func (r *Store) landSegment(run *applyRun, s *segment, plans []*fastPlan, rolledBack *error) error {
	for i := range s.acks {
		r.cache.acked(&s.acks[i])
	}
	rb, err := r.finishTrip(s.t, run, plans)
	if err != nil {
		return err
	}
	if rb != nil {
		// No stable list is stored from here on: the seqs of the rooms
		// Redis lost are behind what was published, and the rebuild the
		// caller runs seeds them from the output topic first.
		*rolledBack, run.merge = rb, nil
	}
	// Redis may have lost its data since an earlier round trip or
	// segment: each one reads the marker again, after its scripts, and
	// every read must pass.
	if err := r.checkGeneration(s.t.gen); err != nil {
		return err
	}
	for i := s.lo; i < s.hi; i++ {
		plans[i] = nil // they are in s.ar
	}
	s.t = applyTrip{}
	s.ar.release()
	return nil
}

// tripAcks are the acks a round trip sends: each goes in the fastLua record
// of its room when the trip plans the room, or else on its own (ackLua).
type tripAcks struct {
	acks  []ranking.Ack
	of    map[string]int // room → its first ack
	taken []bool
}

func newTripAcks(acks []ranking.Ack) *tripAcks {
	t := &tripAcks{acks: acks, of: make(map[string]int, len(acks)), taken: make([]bool, len(acks))}
	for i := range acks {
		if _, dup := t.of[acks[i].Room]; !dup {
			t.of[acks[i].Room] = i
		}
	}
	return t
}

// take returns the room's ack that no plan has taken yet, if any.
func (t *tripAcks) take(room string) *ranking.Ack {
	if j, ok := t.of[room]; ok && !t.taken[j] {
		t.taken[j] = true
		return &t.acks[j]
	}
	return nil
}

// rest returns the acks no plan took.
func (t *tripAcks) rest() []ranking.Ack {
	var rest []ranking.Ack
	for j := range t.acks {
		if !t.taken[j] {
			rest = append(rest, t.acks[j])
		}
	}
	return rest
}

// failed drops the rooms' cache entries after a failed apply (what Redis
// holds for them is not known) and returns err.
func (r *Store) failed(rooms []ranking.RoomUpdate, err error) error {
	r.forget(rooms)
	return err
}

// applyTrip is one round trip of an apply: its room calls and the
// generation marker read after them.
type applyTrip struct {
	calls []roomCall
	gen   *redis.Cmd
}

// roomCall is one queued call of fastLua or loadLua and the rooms it
// holds, indices into the apply's rooms in the call's order.
type roomCall struct {
	cmd   *redis.Cmd
	load  bool
	rooms []int
}

// sendSegment sends one segment of a round trip (see roundTrip): the due
// set's peek when s.peek; s.acks; the room calls of its rooms, in their
// order (fastLua for the planned rooms, loadLua for the ones to read); the
// merged rooms' due entries; and, last, the generation marker's read. It
// runs beside the planning of the next segment, so it touches neither the
// cache nor run beyond reading the rooms and their plans.
func (r *Store) sendSegment(ctx context.Context, run *applyRun, s *segment, plans []*fastPlan, loads [][]any) (applyTrip, error) {
	var t applyTrip
	var due *redis.ZSliceCmd
	_, err := r.run(ctx, func(p *redisscript.Pipe) []*redis.Cmd {
		if s.peek {
			due = p.ZRangeWithScores(ctx, dueKey(r.opt.Env), 0, 0)
		}
		r.queueAcks(ctx, p, s.acks)
		t.calls = r.queueRooms(ctx, p, run, s.lo, s.hi, plans, loads)
		out := make([]*redis.Cmd, len(t.calls))
		for i := range t.calls {
			out[i] = t.calls[i].cmd
		}
		for _, pl := range plans[s.lo:s.hi] {
			if pl != nil && pl.update != nil && pl.update.Due > 0 {
				p.Do(ctx, "ZADD", dueKey(r.opt.Env), "LT", pl.update.Due, pl.update.Room)
			}
		}
		t.gen = r.readGeneration(ctx, p) // last: after every room script
		return out
	})
	if err != nil {
		return t, err
	}
	if due != nil {
		if zs, err := due.Result(); err == nil {
			peek := &ranking.DuePeek{Seen: time.Now()}
			if len(zs) > 0 {
				peek.At = int64(zs[0].Score)
			}
			r.due.Store(peek)
		}
	}
	return t, nil
}

// finishTrip reads a segment's replies: the planned rooms' into
// run.states and run.merged (a room whose plan was refused is read in the
// next trip, and its ack goes back to run.acks), the read rooms' into
// run.read. It returns ErrRedisRolledBack when a room showed that Redis
// went back in time (the apply still completes).
func (r *Store) finishTrip(t applyTrip, run *applyRun, plans []*fastPlan) (rolledBack, err error) {
	for _, c := range t.calls {
		replies, err := c.replies()
		if err != nil {
			return nil, fmt.Errorf("sink: apply rooms: %w", err)
		}
		for j, i := range c.rooms {
			u := &run.rooms[i]
			if c.load {
				if run.read == nil {
					run.read = make([]*loadedRoom, len(run.rooms))
				}
				if run.read[i], err = r.parseLoad(replies[j], u); err != nil {
					return nil, err
				}
				run.partial = run.partial || run.read[i].cr.partial
				continue
			}
			pl := plans[i]
			ok, err := r.finishFast(replies[j], u, pl, &run.states[i])
			if errors.Is(err, ErrRedisRolledBack) {
				rolledBack, err = err, nil
			}
			if err != nil {
				return nil, err
			}
			if !ok {
				if pl.ack != nil {
					run.acks = append(run.acks, *pl.ack)
				}
				continue
			}
			if pl.merged != nil {
				run.merged[i] = ranking.Merged{Done: true, Update: pl.update}
			}
			run.done[i] = true
			run.left--
		}
	}
	return rolledBack, nil
}

// queueAcks queues ackLua for acks on p, up to Config.RoomsPerScript
// rooms per call.
func (r *Store) queueAcks(ctx context.Context, p *redisscript.Pipe, acks []ranking.Ack) {
	per := r.opt.RoomsPerScript
	keys := make([]string, len(acks))
	for i := range acks {
		keys[i] = RoomKeys(r.opt.Env, acks[i].Room).Stable
	}
	args := (&ackArgs{acks: acks}).append(make([]any, 0, len(acks)))
	for a := 0; a < len(acks); a += per {
		b := min(a+per, len(acks))
		p.Run(ctx, ackLua, keys[a:b:b], args[a:b:b]...)
	}
}

// readGeneration queues the read of the generation marker in p. Queued
// after the room scripts of a round trip, it reads the data set they ran on,
// or a later one; redisscript runs it again after any call it runs again.
func (r *Store) readGeneration(ctx context.Context, p *redisscript.Pipe) *redis.Cmd {
	return p.RunCheck(ctx, generationLua, []string{generationKey(r.opt.Env)})
}

// forget drops rooms from the state cache after a failed apply: what Redis
// holds for them is not known.
func (r *Store) forget(rooms []ranking.RoomUpdate) {
	names := make([]string, len(rooms))
	for i := range rooms {
		names[i] = rooms[i].Room
	}
	r.cache.drop(names...)
}

// Read returns the rooms' stable and raw top lists without changing them
// (but for a room scored under other rules, whose ranking it makes again
// under the Store's, as any write would).
func (r *Store) Read(ctx context.Context, rooms []string) ([]ranking.RoomState, error) {
	ups := make([]ranking.RoomUpdate, len(rooms))
	for i, room := range rooms {
		ups[i].Room = room
	}
	return r.Apply(ctx, ups, nil)
}

// partName names a topic-partition: its watermark's field in the stable
// hash.
func partName(p *ranking.Part) string { return p.Topic + "/" + strconv.Itoa(int(p.Partition)) }
