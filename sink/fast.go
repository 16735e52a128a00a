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

// change is a member's new state (as stored) and score.
type change struct {
	user  string
	state MemberState
	score float64
}

// plan computes the fast path of every room the cache holds. plans[i] is
// nil for a room that takes the full script. Building under the cache's
// lock keeps a concurrent Apply from changing an entry while it is read.
// The acks of planned rooms move into their fastLua; the rest are returned.
func (r *Redis) plan(rooms []RoomUpdate, acks []Ack) ([]*fastPlan, []Ack, error) {
	plans := make([]*fastPlan, len(rooms))
	c := r.cache
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
		pl, err := r.planRoom(cr, &rooms[i])
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
func (r *Redis) planRoom(cr *cachedRoom, u *RoomUpdate) (*fastPlan, error) {
	c := r.cache
	pl := &fastPlan{room: cr, expect: cr.token}
	var upd []change
	idx := c.scratch
	clear(idx)
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
					upd[j].state.Merge(&s)
					continue
				}
				idx[m.UserID] = len(upd)
			}
			upd = append(upd, change{user: m.UserID, state: s})
		}
	}

	packed := make([]byte, 0, StateSize*len(upd))
	var hset, zadd, zrem []any
	count := len(cr.list)
	changed := upd[:0]
	for _, m := range upd {
		old, _, known := cr.get(m.user)
		if !known {
			if r.opt.MaxMembers > 0 && count >= r.opt.MaxMembers {
				pl.refused = append(pl.refused, m.user)
				continue
			}
			count++
		}
		s := old
		s.Merge(&m.state)
		start := len(packed)
		packed = s.AppendBinary(packed)
		b := packed[start:len(packed):len(packed)]
		if err := s.UnmarshalBinary(b); err != nil {
			return nil, err
		}
		if known && s == old {
			packed = packed[:start]
			continue
		}
		score, err := scoreOf(&s, r.opt.Meeting)
		if err != nil {
			return nil, fmt.Errorf("sink: apply room %q: time of %s outside the score layout: %w", u.Room, m.user, err)
		}
		changed = append(changed, change{user: m.user, state: s, score: score})
		hset = append(hset, m.user, b)
		if score != Unranked {
			zadd = append(zadd, int64(score), m.user)
		} else {
			// As applyLua: every changed member that is not ranked is
			// ZREMed and counts as a ranking change, so both paths keep
			// the same ranking version.
			zrem = append(zrem, m.user)
		}
	}
	pl.changed = changed
	pl.goTop = count <= goTopMax

	bump := "0"
	if len(zadd)+len(zrem) > 0 {
		bump = "1"
	}
	if len(hset) > 0 {
		pl.next = c.token()
	}
	topn := r.args[1]
	if pl.goTop {
		topn = "0"
	}
	args := make([]any, 0, 10+2*len(u.Parts)+len(hset)+len(zadd)+len(zrem))
	args = append(args, r.args[0], topn, pl.expect, pl.next, bump, "", len(u.Parts))
	for _, part := range u.Parts {
		args = append(args, partName(&part), part.Last)
	}
	args = append(args, len(hset)/2)
	args = append(args, hset...)
	args = append(args, len(zadd)/2)
	args = append(args, zadd...)
	args = append(args, len(zrem))
	args = append(args, zrem...)
	pl.args = args
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
		for _, m := range pl.changed {
			if _, ok := cr.index[m.user]; !ok {
				cache.members++
			}
			cr.set(m.user, m.state, m.score)
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
			cp.set(m.user, m.state, m.score)
		}
		for _, m := range pl.changed {
			cp.set(m.user, m.state, m.score)
		}
		cr = cp
	}
	if pl.goTop {
		st.Top = cr.top(make([]Ranked, 0, r.opt.TopN), r.opt.TopN)
	}
	st.StableScores = st.StableScores[:0]
	for _, user := range st.Stable {
		_, score, _ := cr.get(user)
		st.StableScores = append(st.StableScores, score)
	}
	return true, nil
}
