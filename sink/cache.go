package sink

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/ranking"
)

// DefaultCacheMembers is `rostrum run`'s bound of Config.CacheMembers.
const DefaultCacheMembers = 1_000_000

// stateCache is the sink's in-process copy of rooms' member states. With it
// the sink merges a batch's updates and computes the scores in Go, and sends
// Redis only the finished states and scores (fastLua), instead of having
// Lua unpack, merge, repack and score every member (applyLua).
//
// The copy is an optimisation that a conditional write guards (docs/DESIGN.md §3.7):
// every script that changes a room's member states or ranking also writes a
// new token, unique to that write, in the room's stable hash (field mv), and
// fastLua applies only while the stored token is still the one the copy was
// taken at. Another processor's write, a Redis restart, the room's expiry or
// a rebuild all change or remove the token, and the room falls back to the
// full script, whose reply refills the copy. Tokens are random per process
// plus a counter, so a token never comes back (no ABA), unlike a counter
// that restarts when the room expires.
//
// The copy is bounded by members: past the bound, whole rooms are dropped
// at random (Go's map order) until it fits.
type stateCache struct {
	max    int
	prefix string
	seq    atomic.Uint64

	fast, full, stale, merged atomic.Int64 // applies by path; stale: fast plans refused by Redis; merged: fast applies that took the stable step

	mu      sync.Mutex
	rooms   map[string]*cachedRoom
	members int
	scratch map[string]int  // planRoom's user index, reused under mu
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

// cachedRoom is a room's member states as stored in Redis under token, and
// the room's stable hash as last seen, if known. token is "" while an apply
// planned from the entry is in flight: the entry already holds that apply's
// states, and it is dropped unless Redis confirms them.
type cachedRoom struct {
	token  string
	index  map[string]int32 // user → position in list
	list   []cachedMember
	ranked int // members with a score: the ranking's size
	stable cachedStable
	// refreshed is when a script last refreshed the TTL of all the room's
	// keys (zero: unknown).
	refreshed time.Time
}

// cachedStable is a room's stable hash as the sink last read or wrote it.
// pending is the seq of an output not yet acknowledged (0: none), counted
// only when it is the room's current seq, as the scripts count it.
type cachedStable struct {
	known   bool
	seq     int64
	list    []string
	version int64
	state   string
	pending int64
}

// cachedMember is one member's stored state and its score in the ranking
// (Unranked when it is not ranked). arg is user as a script argument,
// boxed once instead of on every apply.
type cachedMember struct {
	user  string
	arg   any
	state ranking.MemberState
	score float64
}

// set stores a member's new state and score, adding the member if new.
func (cr *cachedRoom) set(user string, arg any, s ranking.MemberState, score float64) {
	if i, ok := cr.index[user]; ok {
		cr.update(int(i), s, score)
		return
	}
	cr.add(user, arg, s, score)
}

// update stores the new state and score of the member at i.
func (cr *cachedRoom) update(i int, s ranking.MemberState, score float64) {
	m := &cr.list[i]
	cr.ranked += rankedDelta(m.score, score)
	m.state, m.score = s, score
}

// add appends a member not yet in the room.
func (cr *cachedRoom) add(user string, arg any, s ranking.MemberState, score float64) {
	if arg == nil {
		arg = user
	}
	cr.index[user] = int32(len(cr.list))
	cr.list = append(cr.list, cachedMember{user: user, arg: arg, state: s, score: score})
	cr.ranked += rankedDelta(ranking.Unranked, score)
}

// rankedDelta is the change of the ranking's size when a member's score
// goes from old to score.
func rankedDelta(old, score float64) int {
	switch {
	case old == ranking.Unranked && score != ranking.Unranked:
		return 1
	case old != ranking.Unranked && score == ranking.Unranked:
		return -1
	}
	return 0
}

// get returns a member's position in list, or -1.
func (cr *cachedRoom) get(user string) int {
	if i, ok := cr.index[user]; ok {
		return int(i)
	}
	return -1
}

// top fills dst with the ranking's best n members as ZREVRANGE returns
// them: score descending, equal scores by user id descending (Redis orders
// equal scores by their bytes).
func (cr *cachedRoom) top(dst []ranking.Ranked, n int) []ranking.Ranked {
	dst = dst[:0]
	for i := range cr.list {
		m := &cr.list[i]
		if m.score == ranking.Unranked {
			continue
		}
		if len(dst) == n && !better(m.score, m.user, &dst[n-1]) {
			continue
		}
		j := len(dst)
		if j < n {
			dst = append(dst, ranking.Ranked{})
		} else {
			j = n - 1
		}
		for j > 0 && better(m.score, m.user, &dst[j-1]) {
			dst[j] = dst[j-1]
			j--
		}
		dst[j] = ranking.Ranked{UserID: m.user, Score: m.score}
	}
	return dst
}

func better(score float64, user string, than *ranking.Ranked) bool {
	return score > than.Score || (score == than.Score && user > than.UserID)
}

// scoreOf returns a state's score in the ranking, or Unranked.
func scoreOf(s *ranking.MemberState, m *codec.Meeting) (float64, error) {
	if !s.Ranked() {
		return ranking.Unranked, nil
	}
	return s.Score(m)
}

// newStateCache returns a cache of at most max members; nil when max is 0
// (no cache).
func newStateCache(max int) *stateCache {
	if max <= 0 {
		return nil
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &stateCache{max: max, prefix: hex.EncodeToString(b[:]) + ".", rooms: make(map[string]*cachedRoom), scratch: make(map[string]int)}
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

// put replaces room's entry with the member states of a full script's
// reply (user, packed state pairs), stored under token, and the stable hash
// it read.
func (c *stateCache) put(room, token string, pairs []any, st *ranking.RoomState, m *codec.Meeting) error {
	if len(pairs)/2 > c.max {
		c.drop(room)
		return nil
	}
	cr := &cachedRoom{token: token, index: make(map[string]int32, len(pairs)/2), list: make([]cachedMember, 0, len(pairs)/2)}
	for i := 0; i+1 < len(pairs); i += 2 {
		user, _ := pairs[i].(string)
		packed, _ := pairs[i+1].(string)
		var s ranking.MemberState
		err := s.UnmarshalBinary([]byte(packed))
		var score float64
		if err == nil {
			score, err = scoreOf(&s, m)
		}
		if err != nil {
			c.drop(room)
			return fmt.Errorf("sink: member state of %q in room %q: %w", user, room, err)
		}
		cr.set(user, nil, s, score)
	}
	cr.stable = stableOf(st)
	if st.Applied { // applyLua refreshed every key's TTL
		cr.refreshed = time.Now()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.rooms[room]; old != nil {
		c.members -= len(old.list)
	}
	c.rooms[room] = cr
	c.members += len(cr.list)
	for r, e := range c.rooms {
		if c.members <= c.max {
			break
		}
		if r != room {
			delete(c.rooms, r)
			c.members -= len(e.list)
		}
	}
	return nil
}

// stableOf returns the stable hash that a script's reply st shows.
func stableOf(st *ranking.RoomState) cachedStable {
	cs := cachedStable{known: true, seq: st.Seq, list: st.Stable, version: st.Version, state: st.HState}
	if st.Pending != nil {
		cs.pending = st.Seq
	}
	return cs
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

// drop forgets rooms (their next apply takes the full script).
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

// CacheStats counts the applies of the state cache's two paths.
type CacheStats struct {
	Rooms, Members int   // held now
	Fast           int64 // room applies merged in Go and written by fastLua
	Full           int64 // room applies merged by applyLua (not cached, or stale)
	Stale          int64 // fast applies that Redis refused because another write came first
	Merged         int64 // fast applies that also took the room's stable step (ApplyMerge)
}

// CacheStats returns the state cache's counters; all zero when the cache
// is disabled.
func (r *Store) CacheStats() CacheStats {
	c := r.cache
	if c == nil {
		return CacheStats{}
	}
	rooms, members := c.size()
	return CacheStats{Rooms: rooms, Members: members, Fast: c.fast.Load(), Full: c.full.Load(), Stale: c.stale.Load(), Merged: c.merged.Load()}
}
