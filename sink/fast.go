package sink

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// goTopMax is the largest room whose raw top-N the sink computes from its
// state cache instead of having the script read it (ZREVRANGE and its
// conversion to Lua cost Redis about 5 µs per room; scanning a few hundred
// cached scores costs Go less than a microsecond). Larger rooms keep the
// sorted set's O(log n) read.
const goTopMax = 256

// fastPlan is one room's apply merged and scored in Go from the state
// cache, ready for fastLua, and what to do with the cache once it ran.
type fastPlan struct {
	room    *cachedRoom // the entry the plan was computed from
	expect  string      // its token
	next    string      // the new token; "" when no member state changes
	args    []any
	changed []change
	refused []string
	ack     *Ack // the room's ack, run by fastLua
	goTop   bool // the raw top-N comes from the cache, not the reply
}

// change is a member's new state (as stored) and score; at is its position
// in the cached room's list, -1 for a new member.
type change struct {
	user  string
	arg   any // user, boxed
	at    int
	state MemberState
	score float64
}

// arena holds the buffers of one Apply's plans, sized for all of them, so
// that planning allocates per Apply rather than per room and member.
type arena struct {
	changes []change
	args    []any
	packed  []byte
}

func (a *arena) init(rooms []RoomUpdate) {
	var args, members int
	for i := range rooms {
		n, m := argsBound(&rooms[i])
		args, members = args+n, members+m
	}
	a.changes = make([]change, 0, members)
	a.args = make([]any, 0, args)
	a.packed = make([]byte, 0, StateSize*members)
}

// argsBound returns at most how many arguments room u's fastLua takes, and
// how many member updates it holds.
func argsBound(u *RoomUpdate) (args, members int) {
	for _, p := range u.Parts {
		members += len(p.Members)
	}
	return 10 + 2*len(u.Parts) + 4*members, members
}

// reserve makes room in the arena for room u's plan; init sized it for
// every room, so this only grows it for a room planned twice.
func (a *arena) reserve(u *RoomUpdate) {
	args, members := argsBound(u)
	if cap(a.changes)-len(a.changes) < members {
		a.changes = make([]change, 0, members)
	}
	if cap(a.args)-len(a.args) < args {
		a.args = make([]any, 0, args)
	}
	if cap(a.packed)-len(a.packed) < StateSize*members {
		a.packed = make([]byte, 0, StateSize*members)
	}
}

// plan computes the fast path of every room the cache holds. plans[i] is
// nil for a room that takes the full script. Building under the cache's
// lock keeps a concurrent Apply from changing an entry while it is read.
// The acks of planned rooms move into their fastLua; the rest are returned.
func (r *Redis) plan(rooms []RoomUpdate, acks []Ack) ([]*fastPlan, []Ack, error) {
	plans := make([]*fastPlan, len(rooms))
	c := r.cache
	var ar arena
	ar.init(rooms)
	c.mu.Lock()
	defer c.mu.Unlock()
	byRoom := make(map[string]int, len(rooms))
	for i := range rooms {
		cr := c.rooms[rooms[i].Room]
		if cr == nil {
			continue
		}
		if _, dup := byRoom[rooms[i].Room]; dup {
			continue // the second apply of a room in one call sees the first's write: full script
		}
		pl, err := r.planRoom(cr, &rooms[i], &ar)
		if err != nil {
			return nil, nil, err
		}
		plans[i] = pl
		byRoom[rooms[i].Room] = i
	}
	var rest []Ack
	for _, a := range acks {
		i, ok := byRoom[a.Room]
		if !ok || plans[i].ack != nil {
			rest = append(rest, a)
			continue
		}
		plans[i].ack = &a
		plans[i].args[5] = a.Seq
	}
	return plans, rest, nil
}

// planRoom merges the room's updates into the cached states exactly as
// applyLua would merge them into the stored ones: updates and states are
// taken in their stored (packed) form, updates of one user from several
// parts are merged first, then into the state; new users are admitted up to
// the members cap in order of first appearance; only changed states are
// written, ranked members are ZADDed with their score, and the others
// ZREMed.
func (r *Redis) planRoom(cr *cachedRoom, u *RoomUpdate, ar *arena) (*fastPlan, error) {
	c := r.cache
	pl := &fastPlan{room: cr, expect: cr.token}

	// The room's updates, one per user.
	ar.reserve(u)
	first := len(ar.changes)
	idx := c.scratch
	if len(u.Parts) > 1 {
		clear(idx)
	}
	var buf [StateSize]byte
	for _, part := range u.Parts {
		for k := range part.Members {
			m := &part.Members[k]
			s := m.State
			if err := s.UnmarshalBinary(s.AppendBinary(buf[:0])); err != nil {
				return nil, err
			}
			if len(u.Parts) > 1 {
				if j, ok := idx[m.UserID]; ok {
					ar.changes[j].state.Merge(&s)
					continue
				}
				idx[m.UserID] = len(ar.changes)
			}
			ar.changes = append(ar.changes, change{user: m.UserID, state: s})
		}
	}

	// Merged into the stored states: keep the changed ones, in place.
	upd := ar.changes[first:]
	changed := upd[:0]
	count := len(cr.list)
	var zadds, zrems int
	for _, m := range upd {
		at := cr.get(m.user)
		var old MemberState
		if at >= 0 {
			old, m.arg = cr.list[at].state, cr.list[at].arg
		} else {
			if r.opt.MaxMembers > 0 && count >= r.opt.MaxMembers {
				pl.refused = append(pl.refused, m.user)
				continue
			}
			count++
			m.arg = m.user
		}
		s := old
		s.Merge(&m.state)
		if err := s.UnmarshalBinary(s.AppendBinary(buf[:0])); err != nil {
			return nil, err
		}
		if at >= 0 && s == old {
			continue
		}
		score, err := scoreOf(&s, r.opt.Meeting)
		if err != nil {
			return nil, fmt.Errorf("sink: apply room %q: time of %s outside the score layout: %w", u.Room, m.user, err)
		}
		m.at, m.state, m.score = at, s, score
		changed = append(changed, m)
		if score != Unranked {
			zadds++
		} else {
			zrems++
		}
	}
	ar.changes = ar.changes[:first+len(changed)]
	pl.changed = changed
	pl.goTop = count <= goTopMax

	bump := "0"
	if zadds+zrems > 0 {
		bump = "1"
	}
	if len(changed) > 0 {
		pl.next = c.token()
	}
	topn := r.args[1]
	if pl.goTop {
		topn = "0"
	}
	a := ar.args[len(ar.args):]
	a = append(a, r.args[0], topn, pl.expect, pl.next, bump, "", len(u.Parts))
	for _, part := range u.Parts {
		a = append(a, partName(&part), part.Last)
	}
	a = append(a, len(changed))
	for i := range changed {
		m := &changed[i]
		start := len(ar.packed)
		ar.packed = m.state.AppendBinary(ar.packed)
		a = append(a, m.arg, ar.packed[start:len(ar.packed):len(ar.packed)])
	}
	a = append(a, zadds)
	for i := range changed {
		if m := &changed[i]; m.score != Unranked {
			a = append(a, int64(m.score), m.arg)
		}
	}
	// As applyLua: every changed member that is not ranked is ZREMed and
	// counts as a ranking change, so both paths keep the same version.
	a = append(a, zrems)
	for i := range changed {
		if m := &changed[i]; m.score == Unranked {
			a = append(a, m.arg)
		}
	}
	pl.args = a[:len(a):len(a)]
	ar.args = ar.args[:len(ar.args)+len(a)]
	return pl, nil
}

// fastRoom queues room u's fastLua on p.
func (r *Redis) fastRoom(ctx context.Context, p redis.Pipeliner, u *RoomUpdate, pl *fastPlan) *redis.Cmd {
	k := RoomKeys(r.opt.Env, u.Room)
	return fastScript.EvalSha(ctx, p, []string{k.Members, k.Ranking, k.Stable, k.Watermarks}, pl.args...)
}

// finishFast reads fastLua's reply into st and moves the cache on to the
// room's new states. It reports false when the room must take the full
// script (the token or a watermark moved on; nothing was written, the ack
// included).
func (r *Redis) finishFast(c *redis.Cmd, u *RoomUpdate, pl *fastPlan, st *RoomState) (bool, error) {
	vals, err := c.Slice()
	if err != nil {
		return false, fmt.Errorf("sink: apply room %q: %w", u.Room, err)
	}
	if len(vals) == 1 {
		r.cache.stale.Add(1)
		r.cache.drop(u.Room)
		return false, nil
	}
	r.cache.fast.Add(1)
	const head = 6
	if len(vals) < head || len(vals)%2 != 0 {
		return false, fmt.Errorf("sink: apply room %q: unexpected reply of %d values", u.Room, len(vals))
	}
	st.Room = u.Room
	st.Applied = vals[0].(int64) == 1
	st.Seq = vals[1].(int64)
	if list, _ := vals[2].(string); list != "" {
		st.Stable = strings.Split(list, ",")
	}
	if out, _ := vals[3].(string); out != "" {
		st.Pending = []byte(out)
	}
	st.Version = vals[4].(int64)
	st.HState, _ = vals[5].(string)
	st.Refused = pl.refused
	if !pl.goTop {
		if err := parseTop(vals[head:], u.Room, st); err != nil {
			return false, err
		}
	}

	cache := r.cache
	cache.mu.Lock()
	defer cache.mu.Unlock()
	cr := pl.room
	if cache.rooms[u.Room] == cr && cr.token == pl.expect {
		for i := range pl.changed {
			m := &pl.changed[i]
			if m.at >= 0 {
				cr.list[m.at].state, cr.list[m.at].score = m.state, m.score
			} else {
				cr.add(m.user, m.arg, m.state, m.score)
				cache.members++
			}
		}
		if pl.next != "" {
			cr.token = pl.next
		}
	} else {
		// A concurrent Apply moved the entry on: forget it, and answer
		// from a private copy with this apply's changes.
		if e := cache.rooms[u.Room]; e != nil {
			cache.members -= len(e.list)
			delete(cache.rooms, u.Room)
		}
		cp := &cachedRoom{index: make(map[string]int32, len(cr.list)), list: make([]cachedMember, 0, len(cr.list))}
		for _, m := range cr.list {
			cp.add(m.user, m.arg, m.state, m.score)
		}
		for _, m := range pl.changed {
			cp.set(m.user, m.arg, m.state, m.score)
		}
		cr = cp
	}
	if pl.goTop {
		st.Top = cr.top(make([]Ranked, 0, r.opt.TopN), r.opt.TopN)
	}
	st.StableScores = st.StableScores[:0]
	for _, user := range st.Stable {
		score := Unranked
		if at := cr.get(user); at >= 0 {
			score = cr.list[at].score
		}
		st.StableScores = append(st.StableScores, score)
	}
	return true, nil
}
