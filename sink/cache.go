package sink

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rostrumhq/rostrum/ranking"
)

// DefaultCacheMembers is `rostrum run`'s bound of Config.CacheMembers.
const DefaultCacheMembers = 1_000_000

// stateCache is the sink's in-process copy of rooms' member states. A room
// it holds is planned from the copy (see roomModel) and written by fastLua
// in one round trip; any other room is read first (loadLua), planned from
// what was read, and written in the next round trip, after which the copy
// holds it.
//
// The copy is an optimisation that a conditional write guards (docs/DESIGN.md §3.7):
// every write of a room's member states also writes a new token, unique to
// that write, in the room's stable hash (field mv), and fastLua applies only
// while the stored token is still the one the plan was made from. Another
// processor's write, a Redis restart, the room's expiry or a rebuild all
// change or remove the token, and the room is read again. Tokens are random
// per process plus a counter, so a token never comes back (no ABA), unlike a
// counter that restarts when the room expires.
//
// The copy is bounded by members: at the end of each apply, whole rooms are
// dropped at random (Go's map order) until it fits. With a bound of 0 it
// holds rooms only while an apply writes them.
type stateCache struct {
	max    int
	prefix string
	seq    atomic.Uint64

	fast, loaded, stale, merged atomic.Int64 // fast: rooms written; loaded: rooms read first; stale: plans refused by Redis; merged: writes that took the stable step

	mu      sync.Mutex
	rooms   map[string]*cachedRoom
	members int
	planner roomPlanner     // plans the cached rooms' updates, under mu
	parts   map[partKey]any // partArg's boxed names, under mu
}

// partKey names a topic-partition.
type partKey struct {
	topic     string
	partition int32
}

// partArg returns the part's "topic/partition", boxed once per
// topic-partition rather than built on every apply. Call it under mu.
func (c *stateCache) partArg(p *ranking.Part) any {
	k := partKey{p.Topic, p.Partition}
	if a, ok := c.parts[k]; ok {
		return a
	}
	if c.parts == nil {
		c.parts = map[partKey]any{}
	}
	a := any(partName(p))
	c.parts[k] = a
	return a
}

// cachedRoom is a room's model (see roomModel) as stored in Redis under
// token ("": the room has none). While an apply planned from the entry is in
// flight, the entry already holds that apply's states, and it is dropped
// unless Redis confirms them.
type cachedRoom struct {
	roomModel
	token    string
	inFlight bool
	// refreshed is when a script last refreshed the TTL of all the room's
	// keys (zero: unknown).
	refreshed time.Time
}

// take records that a plan moved the cached room to the states of its
// apply: the room's new members count toward the cache's bound, and the
// entry is in flight, unusable until Redis confirms the apply.
func (c *stateCache) take(cr *cachedRoom, rp *roomPlan) {
	for i := range rp.changed {
		if rp.changed[i].added {
			c.members++
		}
	}
	cr.inFlight = true
}

// newStateCache returns a cache of at most max members, whose rooms plan
// their updates with cfg.
func newStateCache(max int, cfg roomConfig) *stateCache {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &stateCache{max: max, prefix: hex.EncodeToString(b[:]) + ".", rooms: make(map[string]*cachedRoom), planner: roomPlanner{roomConfig: cfg}}
}

// token returns a token never returned before, by this or any other process
// (48 random bits per process).
func (c *stateCache) token() string {
	return c.prefix + strconv.FormatUint(c.seq.Add(1), 36)
}

// olderOwn reports whether stored is a token of this cache older than
// known: the room went back to a state this process wrote before its last
// write, that is, Redis lost that write.
func (c *stateCache) olderOwn(stored, known string) bool {
	s, ok1 := strings.CutPrefix(stored, c.prefix)
	k, ok2 := strings.CutPrefix(known, c.prefix)
	if !ok1 || !ok2 {
		return false
	}
	sn, err1 := strconv.ParseUint(s, 36, 64)
	kn, err2 := strconv.ParseUint(k, 36, 64)
	return err1 == nil && err2 == nil && sn < kn
}

// adopt makes cr, read from Redis, room's entry. Call it under mu.
func (c *stateCache) adopt(room string, cr *cachedRoom) {
	if old := c.rooms[room]; old != nil {
		c.members -= len(old.list)
	}
	c.rooms[room] = cr
	c.members += len(cr.list)
}

// dropPartial drops the entries of rooms read in part: each holds only
// the members one update named (see roomModel.partial).
func (c *stateCache) dropPartial(rooms []ranking.RoomUpdate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range rooms {
		if e := c.rooms[rooms[i].Room]; e != nil && e.partial && !e.inFlight {
			delete(c.rooms, rooms[i].Room)
			c.members -= len(e.list)
		}
	}
}

// trim drops whole rooms, but those an apply is writing, until the cache
// holds at most its bound.
func (c *stateCache) trim() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.members <= c.max {
		return
	}
	for room, e := range c.rooms {
		if c.members <= c.max {
			break
		}
		if !e.inFlight {
			delete(c.rooms, room)
			c.members -= len(e.list)
		}
	}
}

// stored records in the cache that StoreStable stored u (ok) or not.
func (c *stateCache) stored(u *ranking.StableUpdate, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cr := c.rooms[u.Room]
	if cr == nil {
		return
	}
	cs := &cr.stable
	if !ok || !cs.known || cs.seq != u.PrevSeq || cs.version != u.Version || cs.state != u.PrevState {
		cs.known = false
		return
	}
	if !u.StateOnly {
		cs.seq, cs.list, cs.pending = u.PrevSeq+1, u.List, u.PrevSeq+1
	}
	cs.state = u.State
}

// acked records in the cache that ackLua ran for a.
func (c *stateCache) acked(a *ranking.Ack) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cr := c.rooms[a.Room]; cr != nil && cr.stable.pending == a.Seq {
		cr.stable.pending = 0
	}
}

// drop forgets rooms (their next apply reads them first).
func (c *stateCache) drop(rooms ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, room := range rooms {
		if e := c.rooms[room]; e != nil {
			c.members -= len(e.list)
			delete(c.rooms, room)
		}
	}
}

// clear forgets every room.
func (c *stateCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.rooms)
	c.members = 0
}

// size returns the rooms and members held.
func (c *stateCache) size() (rooms, members int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.rooms), c.members
}

// CacheStats counts the state cache's room applies.
type CacheStats struct {
	Rooms, Members int   // held now
	Fast           int64 // room applies planned in Go and written by fastLua
	Loaded         int64 // rooms read before they could be planned (not cached, or stale)
	Stale          int64 // fast applies that Redis refused because another write came first
	Merged         int64 // fast applies that also took the room's stable step (ApplyMerge)
}

// CacheStats returns the state cache's counters.
func (r *Store) CacheStats() CacheStats {
	c := r.cache
	rooms, members := c.size()
	return CacheStats{Rooms: rooms, Members: members, Fast: c.fast.Load(), Loaded: c.loaded.Load(), Stale: c.stale.Load(), Merged: c.merged.Load()}
}
