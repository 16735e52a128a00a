package sink

// The fast path of a cached room: the room model's plan of the update (see
// room.go: the merged states, the top-N and the stable step) encoded as
// fastLua's arguments (choosing the TTL refresh), and back from its reply.
// It is kept in one file because its steps share one plan and one arena and
// read best in order.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
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
// cache, ready for fastLua.
type fastPlan struct {
	room    *cachedRoom // the entry, already holding the apply's states
	expect  string      // its token before the apply
	next    string      // the new token; "" when no member state changes
	args    []any
	refused []string
	ack     *ranking.Ack // the room's ack, run by fastLua
	goTop   bool         // the raw top-N comes from the cache (top), not the reply
	bump    bool         // the apply changes the ranking version
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

func (a *arena) init(rooms []ranking.RoomUpdate) {
	var args, members int
	for i := range rooms {
		n, m := argsBound(&rooms[i])
		args, members = args+n, members+m
	}
	a.changes = make([]change, 0, members)
	a.args = make([]any, 0, args)
	a.packed = make([]byte, 0, ranking.StateSize*members)
	a.strs = make([]string, 0, 10*len(rooms))
	a.nums = make([]int64, 0, 6*len(rooms)+members)
	a.raws = make([]rawArg, 0, members)
	a.plans = make([]fastPlan, 0, len(rooms))
}

// argsBound returns at most how many arguments room u's record in fastLua
// takes, and how many member updates it holds.
func argsBound(u *ranking.RoomUpdate) (args, members int) {
	for _, p := range u.Parts {
		members += len(p.Members)
	}
	return fastRoomBound(len(u.Parts), members), members
}

// reserve makes room in the arena for room u's plan; init sized it for
// every room, so this only grows it for a room planned twice.
func (a *arena) reserve(u *ranking.RoomUpdate) {
	args, members := argsBound(u)
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

// plan computes the fast path of every room the cache holds. plans[i] is
// nil for a room that takes the full script. Planning moves each planned
// entry to the apply's states at once (see cachedRoom); the entries of a
// failed apply are dropped. The acks of planned rooms move into their
// fastLua; the rest are returned. With merge, rooms whose stable hash the
// cache knows are merged too.
func (r *Store) plan(rooms []ranking.RoomUpdate, acks []ranking.Ack, merge ranking.StableStep) ([]*fastPlan, []ranking.Ack, error) {
	plans := make([]*fastPlan, len(rooms))
	c := r.cache
	var ar arena
	ar.init(rooms)
	ackOf := make(map[string]int, len(acks))
	for i := range acks {
		if _, dup := ackOf[acks[i].Room]; !dup {
			ackOf[acks[i].Room] = i
		}
	}
	taken := make([]bool, len(acks))
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range rooms {
		cr := c.rooms[rooms[i].Room]
		if cr == nil || cr.token == "" {
			continue // not cached, or already planned in this call: full script
		}
		var ack *ranking.Ack
		if j, ok := ackOf[rooms[i].Room]; ok && !taken[j] {
			ack, taken[j] = &acks[j], true
		}
		pl, err := r.planRoom(cr, &rooms[i], ack, &ar, merge)
		if err != nil {
			return nil, nil, err
		}
		plans[i] = pl
	}
	var rest []ranking.Ack
	for j := range acks {
		if !taken[j] {
			rest = append(rest, acks[j])
		}
	}
	return plans, rest, nil
}

// planRoom asks the cached room's model for the plan of the update u
// (roomModel.plan: the model moves to the apply's states at once, see
// cachedRoom) and encodes it as the room's record of fastLua's arguments
// (fastRecord).
func (r *Store) planRoom(cr *cachedRoom, u *ranking.RoomUpdate, ack *ranking.Ack, ar *arena, merge ranking.StableStep) (*fastPlan, error) {
	c := r.cache
	pl := ar.plan()
	pl.room, pl.expect, pl.ack = cr, cr.token, ack
	ar.reserve(u)
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
	pl.refused, pl.goTop, pl.top, pl.merged, pl.update = rp.refused, rp.hasTop, rp.top, rp.merged, rp.update
	d := ar.roomChange(cr, rp.changed)
	pl.bump = d.zadds+d.zrems > 0
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
	// As applyLua: every changed member that is not ranked is ZREMed (its
	// score is sent as "") and counts as a ranking change (pl.bump), so
	// both paths keep the same version.
	rec := fastRoomArgs{expect: pl.expect, next: pl.next, bump: pl.bump, top: !pl.goTop, merge: mergeNone, parts: u.Parts,
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
	if len(u.Parts) == 0 && pl.update == nil {
		return ttlNone // a read
	}
	now := time.Now()
	if now.Sub(cr.refreshed) >= r.opt.RoomTTL/8 {
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

// fastCall is one queued call of fastLua and the rooms it applies.
type fastCall struct {
	cmd   *redis.Cmd
	rooms []int // indices into the apply's rooms, in the call's order
}

// queueRooms queues every room's script on p, in the rooms' order: the
// full script for a room without a plan, fastLua for the others, up to
// Config.RoomsPerScript consecutive planned rooms per call, whose
// arguments are fastLua's head and then each room's record. full[i] is
// room i's full-script call (nil for a planned room). The order matters
// for a room the apply holds twice (planned once, then left to the full
// script, see plan): its calls run in the order of its updates, so that
// the later one's watermarks do not skip the earlier one.
func (r *Store) queueRooms(ctx context.Context, p *redisscript.Pipe, rooms []ranking.RoomUpdate, plans []*fastPlan) (fast []fastCall, full []*redis.Cmd) {
	full = make([]*redis.Cmd, len(rooms))
	var planned, calls, nargs, run int // run: the planned rooms so far of the call being counted
	for _, pl := range plans {
		if pl == nil {
			run = 0
			continue
		}
		if run == 0 {
			calls++
		}
		planned, nargs = planned+1, nargs+len(pl.args)
		if run++; run == r.opt.RoomsPerScript {
			run = 0
		}
	}
	nargs += calls * len(r.fastHead)
	fast = make([]fastCall, 0, calls)
	idx := make([]int, 0, planned)
	keys := make([]string, 0, 3*planned)
	args := make([]any, 0, nargs)
	var i0, k0, a0 int // where the call being filled starts in idx, keys and args
	flush := func() {
		if len(idx) == i0 {
			return
		}
		cmd := p.Run(ctx, fastLua, keys[k0:len(keys):len(keys)], args[a0:len(args):len(args)]...)
		fast = append(fast, fastCall{cmd: cmd, rooms: idx[i0:len(idx):len(idx)]})
		i0, k0, a0 = len(idx), len(keys), len(args)
	}
	for i := range rooms {
		if plans == nil || plans[i] == nil {
			flush()
			full[i] = r.applyRoom(ctx, p, &rooms[i], false)
			continue
		}
		k := RoomKeys(r.opt.Env, rooms[i].Room)
		keys = append(keys, k.Members, k.Ranking, k.Stable)
		if len(idx) == i0 {
			args = append(args, r.fastHead...)
		}
		args = append(args, plans[i].args...)
		idx = append(idx, i)
		if len(idx)-i0 == r.opt.RoomsPerScript {
			flush()
		}
	}
	flush()
	return fast, full
}

// replies returns the call's reply of each of its rooms.
func (fc *fastCall) replies() ([][]any, error) {
	vals, err := fc.cmd.Slice()
	if err != nil {
		return nil, err
	}
	if len(vals) != len(fc.rooms) {
		return nil, fmt.Errorf("fast script replied for %d rooms of %d", len(vals), len(fc.rooms))
	}
	out := make([][]any, len(vals))
	for j, v := range vals {
		room, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("fast script replied %T for a room", v)
		}
		out[j] = room
	}
	return out, nil
}

// finishFast reads the room's reply of fastLua (vals) into st, and confirms
// the cache entry or drops it. It reports false when the room must take the
// full script (the token, a watermark or the merged-from stable state moved
// on; nothing was written, the ack included), and ErrRedisRolledBack with
// false when the room holds an older token of this process than the one it
// last wrote.
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
	cr.token = pl.expect
	if pl.next != "" {
		cr.token = pl.next
	}
	if !pl.refresh.IsZero() {
		cr.refreshed = pl.refresh
	}
	return true, nil
}
