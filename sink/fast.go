package sink

// A room's write: the room model's plan of the update (see room.go: the
// merged states, the top-N and the stable step) encoded as fastLua's
// arguments (choosing the TTL refresh), and back from its reply. It is kept
// in one file because its steps share one plan and one arena and read best
// in order.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/internal/redisscript"
	"github.com/rostrumhq/rostrum/ranking"
)

// goTopMax is the largest room whose raw top-N the sink computes from its
// state cache instead of having the script read it (ZREVRANGE and its
// conversion to Lua cost Redis about 5 µs per room; scanning a few hundred
// cached scores costs Go less than a microsecond). Larger rooms keep the
// sorted set's O(log n) read.
const goTopMax = 256

// fastPlan is one room's apply merged and scored in Go from the state
// cache or a read, ready for fastLua.
type fastPlan struct {
	room    *cachedRoom // the entry, already holding the apply's states
	expect  string      // its token before the apply
	next    string      // the new token; "" when no member state changes
	args    []any
	refused []string
	ack     *ranking.Ack // the room's ack, run by fastLua
	goTop   bool         // the raw top-N comes from the cache (top), not the reply
	ranking string       // how the apply changes the ranking (rankingSame, …)
	refresh time.Time    // when fastLua refreshes every key's TTL; zero: it does not

	// With a merge: the room's state as the apply leaves it (what the
	// processor merged from), and the update fastLua stores (nil: none).
	merged *ranking.RoomState
	update *ranking.StableUpdate

	top []ranking.Ranked // the room's raw top-N when goTop, as the plan ranked it
}

// change is a member's change of the room's plan, with its user as
// fastLua's argument.
type change struct {
	memberChange
	arg any
}

// arena holds the buffers of one Apply's plans, sized for all of them, so
// that planning allocates per Apply rather than per room and member.
//
// Script arguments are boxed as pointers into the arena (str, num, raw):
// go-redis writes a *string, an *int64 and an encoding.BinaryMarshaler like
// the value itself, and a pointer fits in an interface value without an
// allocation, where a string, an int64 ≥ 256 or a []byte boxed by value
// allocates one each. A boxed value is never changed: a slice that grows
// leaves the pointers into its old array valid and holding the same values.
//
// The rooms' plans are cut from a slab of the arena too: they live as long
// as the apply's result, and a room no longer costs an allocation for each.
type arena struct {
	changes []change
	args    []any
	packed  []byte
	strs    []string
	nums    []int64
	raws    []rawArg
	plans   []fastPlan
}

// rawArg is a script argument written as its bytes.
type rawArg []byte

// MarshalBinary returns the bytes; go-redis writes them as the argument.
func (b *rawArg) MarshalBinary() ([]byte, error) { return *b, nil }

func (a *arena) str(s string) any {
	a.strs = append(a.strs, s)
	return &a.strs[len(a.strs)-1]
}

func (a *arena) num(v int64) any {
	a.nums = append(a.nums, v)
	return &a.nums[len(a.nums)-1]
}

func (a *arena) raw(b []byte) any {
	a.raws = append(a.raws, b)
	return &a.raws[len(a.raws)-1]
}

// plan returns a new, zero plan cut from the arena.
func (a *arena) plan() *fastPlan {
	a.plans = append(a.plans, fastPlan{})
	return &a.plans[len(a.plans)-1]
}

// init sizes the arena for the plans of the rooms not done, reusing the
// arrays it holds where they are large enough.
func (a *arena) init(rooms []ranking.RoomUpdate, done []bool) {
	var n, args, members int
	for i := range rooms {
		if done[i] {
			continue
		}
		r, m := argsBound(&rooms[i])
		n, args, members = n+1, args+r, members+m
	}
	a.changes = reuse(a.changes, members)
	a.args = reuse(a.args, args)
	a.packed = reuse(a.packed, ranking.StateSize*members)
	a.strs = reuse(a.strs, 10*n)
	a.nums = reuse(a.nums, 6*n+members)
	a.raws = reuse(a.raws, members)
	a.plans = reuse(a.plans, n)
}

// reuse returns s emptied when it has room for n, or else a new slice of
// capacity n.
func reuse[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:0]
	}
	return make([]T, 0, n)
}

// arenas holds the arenas of landed segments (see roundTrip), for the next
// segments' plans: once a segment's replies are read, nothing refers to its
// plans and arguments any longer.
var arenas = sync.Pool{New: func() any { return new(arena) }}

// release empties a and puts it back in arenas. Its pointers are cleared,
// so that a pooled arena keeps no room, plan or argument alive: up to each
// slice's length, since every release clears what its use filled.
func (a *arena) release() {
	clear(a.changes)
	clear(a.args)
	clear(a.strs)
	clear(a.raws)
	clear(a.plans)
	arenas.Put(a)
}

// argsBound returns at most how many arguments room u's record in fastLua
// takes, and how many member updates it holds.
func argsBound(u *ranking.RoomUpdate) (args, members int) {
	for _, p := range u.Parts {
		members += len(p.Members)
	}
	return fastRoomBound(len(u.Parts), members), members
}

// reserve makes room in the arena for the plan of a room update of parts
// parts and members member updates, or changes; init sized it for every
// room's update, so this only grows it for a room planned twice, or one
// whose ranking is made again (all its members change).
func (a *arena) reserve(parts, members int) {
	args := fastRoomBound(parts, members)
	if cap(a.changes)-len(a.changes) < members {
		a.changes = make([]change, 0, members)
	}
	if cap(a.args)-len(a.args) < args {
		a.args = make([]any, 0, args)
	}
	if cap(a.packed)-len(a.packed) < ranking.StateSize*members {
		a.packed = make([]byte, 0, ranking.StateSize*members)
	}
}

// plan plans the apply of the rooms lo..hi-1 of run not yet applied that
// the cache holds or the last round trip read: plans[i] is room i's plan,
// nil for a room to read (*loads[i] holds its loadLua record; *loads is
// nil while no room is read) or one already applied.
// Planning moves each planned entry to the apply's states at once (see
// cachedRoom); the entries of a failed apply are dropped. A planned room's
// ack (acks.take) moves into its fastLua; the round trip sends the rest.
// With run.merge, rooms whose plan can take the stable step are merged too.
//
// A room the apply holds twice has its later update wait, neither planned
// nor read, until the earlier one is applied (applyRun.waits): its updates
// are written in order, so that the later one's watermarks do not skip the
// earlier one. Planning from the entry or from a read while the earlier
// update was still to be written (read again after Redis refused its plan,
// or in flight in a segment beside) could write the later one first.
func (r *Store) plan(run *applyRun, lo, hi int, plans []*fastPlan, loads *[][]any, acks *tripAcks, ar *arena) error {
	rooms := run.rooms
	c := r.cache
	ar.init(rooms[lo:hi], run.done[lo:hi])
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := lo; i < hi; i++ {
		if run.done[i] || run.waits(i) {
			continue
		}
		u := &rooms[i]
		var lr *loadedRoom
		if run.loaded != nil {
			lr = run.loaded[i]
		}
		cr := c.rooms[u.Room]
		// read the room: a plan holds its entry, or nothing was read and
		// the cache holds no entry to plan from (a room read in part
		// is no such entry: it holds only the members one update named)
		if cr != nil && cr.inFlight || lr == nil && (cr == nil || cr.partial) {
			if *loads == nil {
				*loads = make([][]any, len(rooms))
			}
			(*loads)[i] = (&loadRoomArgs{parts: u.Parts, users: u.Parts}).append(nil, c)
			continue
		}
		ack := acks.take(u.Room)
		var refused []string
		if lr != nil {
			c.adopt(u.Room, lr.cr)
			cr = lr.cr
			if !run.force {
				u, refused = lr.unapplied(u, r.opt.MaxMembers > 0)
			}
		}
		var err error
		if plans[i], err = r.planRoom(cr, u, ack, ar, run.merge, refused); err != nil {
			return err
		}
	}
	return nil
}

// planRoom asks the room's model for the plan of the update u
// (roomModel.plan: the model moves to the apply's states at once, see
// cachedRoom) and encodes it as the room's record of fastLua's arguments
// (fastRecord). refused are users refused before the plan (see
// loadedRoom.unapplied).
func (r *Store) planRoom(cr *cachedRoom, u *ranking.RoomUpdate, ack *ranking.Ack, ar *arena, merge ranking.StableStep, refused []string) (*fastPlan, error) {
	c := r.cache
	pl := ar.plan()
	pl.room, pl.expect, pl.ack = cr, cr.token, ack
	var acked int64
	if ack != nil {
		acked = ack.Seq
	}
	rankedBefore := cr.ranked
	rp, err := cr.plan(u, acked, merge, &c.planner)
	c.take(cr, &rp)
	if err != nil {
		return nil, err
	}
	if len(rp.changed) > 0 {
		pl.next = c.token()
	}
	ar.reserve(len(u.Parts), len(rp.changed))
	if len(refused) > 0 {
		rp.refused = withRefused(refused, rp.refused)
		if rp.merged != nil {
			rp.merged.Refused = rp.refused
		}
	}
	pl.refused, pl.goTop, pl.top, pl.merged, pl.update = rp.refused, rp.hasTop, rp.top, rp.merged, rp.update
	d := ar.roomChange(cr, rp.changed)
	switch {
	case rp.rebuilt:
		pl.ranking = rankingRebuilt
	case d.zadds+d.zrems > 0:
		pl.ranking = rankingChanged
	default:
		pl.ranking = rankingSame
	}
	return pl, r.fastRecord(pl, cr, u, ar, d, rankedBefore == 0 && d.zadds > 0)
}

// roomChange is a plan's changed members as fastArgs encodes them, with how
// many of them are ranked and not.
type roomChange struct {
	changed      []change
	zadds, zrems int
}

// roomChange returns the changed members, held by cr, in ar.changes. A
// member's argument is its user boxed as a pointer into cr's list, which
// costs no allocation (see arena): users never change there.
func (a *arena) roomChange(cr *cachedRoom, changed []memberChange) roomChange {
	d := roomChange{changed: a.changes[len(a.changes):]}
	for i := range changed {
		m := &changed[i]
		d.changed = append(d.changed, change{memberChange: *m, arg: &cr.list[m.at].user})
		if m.isRanked() {
			d.zadds++
		} else {
			d.zrems++
		}
	}
	a.changes = a.changes[:len(a.changes)+len(d.changed)]
	return d
}

// fastRecord encodes the plan's record of fastLua's arguments (see
// fastRoomArgs) into pl.args, cut from the arena, with the stable step's
// (planMerge). newRanking says that the apply creates the room's ranking.
func (r *Store) fastRecord(pl *fastPlan, cr *cachedRoom, u *ranking.RoomUpdate, ar *arena, d roomChange, newRanking bool) error {
	// Every changed member that is not ranked is ZREMed and counts as a
	// ranking change (pl.ranking), as the model counts the version.
	rec := fastRoomArgs{expect: pl.expect, next: pl.next, ranking: pl.ranking, top: !pl.goTop, merge: mergeNone, parts: u.Parts,
		members: d.changed, ranked: d.zadds}
	if pl.ack != nil {
		rec.ack = pl.ack.Seq
	}
	r.planMerge(&rec, cr, pl)
	rec.refresh = r.ttlMode(cr, u, pl, newRanking)
	a := rec.append(ar.args[len(ar.args):], ar, r.cache)
	pl.args = a[:len(a):len(a)]
	ar.args = ar.args[:len(ar.args)+len(a)]
	return nil
}

// ttlMode returns fastLua's TTL refresh for a plan. Refreshing the TTL of
// the room's three keys on every write is three commands per script; instead
// every key is refreshed when the last refresh this process saw is older
// than an eighth of the TTL, so a room written at least that often never
// expires, and an idle room expires between 7/8 of the TTL and the TTL
// after its last write. Between refreshes, only a ranking that the apply
// creates (Redis deletes an empty sorted set) gets its TTL at once.
func (r *Store) ttlMode(cr *cachedRoom, u *ranking.RoomUpdate, pl *fastPlan, newRanking bool) string {
	if len(u.Parts) == 0 && pl.update == nil && pl.ranking != rankingRebuilt {
		return ttlNone // a read
	}
	now := time.Now()
	if now.Sub(cr.refreshed) >= r.opt.RoomTTL/8 || pl.ranking == rankingRebuilt {
		pl.refresh = now
		return ttlAll
	}
	if newRanking {
		return ttlRanking
	}
	return ttlNone
}

// planMerge sets the merge fields of the room's record: the stable step
// the plan took (see roomModel.plan), if any.
func (r *Store) planMerge(rec *fastRoomArgs, cr *cachedRoom, pl *fastPlan) {
	cs := &cr.stable
	if pl.merged == nil {
		return
	}
	rec.merge, rec.seq, rec.version, rec.hstate = mergeMerged, cs.seq, cs.version, cs.state
	up := pl.update
	if up == nil {
		return
	}
	rec.merge, rec.state = mergeState, up.State
	if !up.StateOnly {
		rec.merge, rec.list, rec.out = mergeStore, strings.Join(up.List, ","), up.Out
	}
}

// queueRooms queues the room calls of the rooms lo..hi-1 on p, in their order:
// fastLua for the planned rooms, loadLua for the ones to read, up to
// Config.RoomsPerScript consecutive rooms of one kind per call; a fastLua
// call's arguments are its head and then each room's record. The order
// matters for a room the apply holds twice (see plan).
func (r *Store) queueRooms(ctx context.Context, p *redisscript.Pipe, run *applyRun, lo, hi int, plans []*fastPlan, loads [][]any) []roomCall {
	head := r.fastHead
	if run.force {
		head = r.fastHeadForce
	}
	var nrooms, nargs, fast int // fast: the planned rooms so far of the fastLua call being counted
	for i := lo; i < hi; i++ {
		switch {
		case plans[i] != nil:
			if fast == 0 {
				nargs += len(head)
			}
			if fast++; fast == r.opt.RoomsPerScript {
				fast = 0
			}
			nrooms, nargs = nrooms+1, nargs+len(plans[i].args)
		case loads != nil && loads[i] != nil:
			nrooms, nargs, fast = nrooms+1, nargs+len(r.loadHead)+len(loads[i]), 0
		}
	}
	var calls []roomCall
	idx := make([]int, 0, nrooms)
	keys := make([]string, 0, 3*nrooms)
	args := make([]any, 0, nargs)
	var i0, k0, a0 int // where the call being filled starts in idx, keys and args
	load := false      // the kind of the call being filled
	flush := func() {
		if len(idx) == i0 {
			return
		}
		script := fastLua
		if load {
			script = loadLua
		}
		cmd := p.Run(ctx, script, keys[k0:len(keys):len(keys)], args[a0:len(args):len(args)]...)
		calls = append(calls, roomCall{cmd: cmd, load: load, rooms: idx[i0:len(idx):len(idx)]})
		i0, k0, a0 = len(idx), len(keys), len(args)
	}
	for i := lo; i < hi; i++ {
		if plans[i] == nil && (loads == nil || loads[i] == nil) {
			continue
		}
		if l := plans[i] == nil; l != load {
			flush()
			load = l
		}
		k := RoomKeys(r.opt.Env, run.rooms[i].Room)
		keys = append(keys, k.Members, k.Ranking, k.Stable)
		switch {
		case load:
			if len(idx) == i0 {
				args = append(args, r.loadHead...)
			}
			args = append(args, loads[i]...)
		case len(idx) == i0:
			args = append(args, head...)
			fallthrough
		default:
			args = append(args, plans[i].args...)
		}
		idx = append(idx, i)
		if len(idx)-i0 == r.opt.RoomsPerScript {
			flush()
		}
	}
	flush()
	return calls
}

// replies returns the call's reply of each of its rooms.
func (c *roomCall) replies() ([][]any, error) {
	vals, err := c.cmd.Slice()
	if err != nil {
		return nil, err
	}
	if len(vals) != len(c.rooms) {
		return nil, fmt.Errorf("room script replied for %d rooms of %d", len(vals), len(c.rooms))
	}
	out := make([][]any, len(vals))
	for j, v := range vals {
		room, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("room script replied %T for a room", v)
		}
		out[j] = room
	}
	return out, nil
}

// finishFast reads the room's reply of fastLua (vals) into st, and confirms
// the cache entry or drops it. It reports false when the room must be read
// and planned again (the token, a watermark or the merged-from stable state
// moved on; nothing was written, the ack included), and ErrRedisRolledBack
// with false when the room holds an older token of this process than the
// one it last wrote.
func (r *Store) finishFast(vals []any, u *ranking.RoomUpdate, pl *fastPlan, st *ranking.RoomState) (bool, error) {
	cache := r.cache
	if len(vals) == 0 {
		cache.drop(u.Room)
		return false, fmt.Errorf("sink: apply room %q: empty reply", u.Room)
	}
	if n, _ := vals[0].(int64); (n == fastMoved || n == fastBehind) && len(vals) <= 2 {
		cache.stale.Add(1)
		cache.drop(u.Room)
		if len(vals) == 2 { // fastMoved, with the stored token
			if stored, _ := vals[1].(string); cache.olderOwn(stored, pl.expect) {
				r.opt.Logger.Warn("redis went back in time: a room holds an older state than this processor wrote",
					zap.String("room", u.Room), zap.String("token", stored), zap.String("expected", pl.expect))
				return false, ErrRedisRolledBack
			}
		}
		return false, nil
	}
	cache.fast.Add(1)
	cr := pl.room
	if pl.merged != nil {
		cache.merged.Add(1)
		*st = *pl.merged
	} else {
		const head = 6 // parseHead's values, before the raw top list
		if len(vals) < head || len(vals)%2 != 0 {
			cache.drop(u.Room)
			return false, fmt.Errorf("sink: apply room %q: unexpected reply of %d values", u.Room, len(vals))
		}
		parseHead(vals, u.Room, st)
		st.Refused = pl.refused
		if !pl.goTop {
			if err := parseTop(vals[head:], u.Room, st); err != nil {
				cache.drop(u.Room)
				return false, err
			}
		}
	}

	cache.mu.Lock()
	defer cache.mu.Unlock()
	if pl.merged == nil {
		if pl.goTop {
			st.Top = pl.top
		}
		cr.stableScores(st)
		cr.stable = stableOf(st)
	} else {
		cs := &cr.stable
		cs.version = st.Version
		if up := pl.update; up != nil {
			if !up.StateOnly {
				cs.seq, cs.list, cs.pending = cs.seq+1, up.List, cs.seq+1
			}
			cs.state = up.State
		}
	}
	if pl.ack != nil && cr.stable.pending == pl.ack.Seq {
		cr.stable.pending = 0
	}
	cr.token, cr.inFlight = pl.expect, false
	if pl.next != "" {
		cr.token = pl.next
	}
	if !pl.refresh.IsZero() {
		cr.refreshed = pl.refresh
	}
	return true, nil
}
