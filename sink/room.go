package sink

// The in-memory room: a room's member states, scores and stable list, and
// what a room update does to them (roomModel.plan): which members change,
// who the members cap refuses, the new top, and the stable step taken on
// the state the update leaves. Nothing here knows of Redis, state tokens or
// script arguments.
//
// roomModel is a type of its own that cachedRoom embeds, rather than
// cachedRoom itself: a plan depends only on the members and the stable
// list, so the model reads, and is tested, apart from what keeps the copy
// in step with Redis (the token, the TTL refresh, the cache's bound), which
// stays with cachedRoom in cache.go. Embedding keeps the cache's and the
// apply's uses of the room (cr.stable, cr.list, cr.stableScores) as they
// read.

import (
	"fmt"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/ranking"
)

// roomModel is a room's members with their states and scores, and its
// stable list. A member keeps its position in list for as long as the
// model lives; a new member is appended. The zero roomModel is an empty
// room whose stable list is not known.
type roomModel struct {
	index  map[string]int32 // user → position in list
	list   []roomMember
	ranked int // members with a score: the ranking's size
	stable roomStable
	// rescore: the stored ranking was scored under other rules than the
	// model's; the next plan of a room with members makes it again whole.
	rescore bool
	// partial: the model holds only some of the room's members (a large
	// room read in part, see loadLua), count of them in all; it plans
	// updates of the members it holds, and does not rank the top.
	partial bool
	count   int
}

// size returns the room's number of members.
func (m *roomModel) size() int {
	if m.partial {
		return m.count
	}
	return len(m.list)
}

// roomMember is one member's state and its score in the ranking (Unranked
// when it is not ranked).
type roomMember struct {
	user  string
	state ranking.MemberState
	score float64
}

// roomStable is a room's stable list with its seq, the ranking version and
// hysteresis state it was stored with, if known. pending is the seq of an
// output not yet acknowledged (0: none), counted only when it is the room's
// current seq.
type roomStable struct {
	known   bool
	seq     int64
	list    []string
	version int64
	state   string
	pending int64
}

// newRoomModel returns an empty room with space for n members.
func newRoomModel(n int) roomModel {
	return roomModel{index: make(map[string]int32, n), list: make([]roomMember, 0, n)}
}

// stableOf returns the stable list that st, a room's state after an apply
// or a read, shows.
func stableOf(st *ranking.RoomState) roomStable {
	cs := roomStable{known: true, seq: st.Seq, list: st.Stable, version: st.Version, state: st.HState}
	if st.Pending != nil {
		cs.pending = st.Seq
	}
	return cs
}

// roomConfig is what a room's plan depends on besides the room.
type roomConfig struct {
	topN       int            // size of the top lists
	topMax     int            // the largest room (in members) whose top a plan ranks
	maxMembers int            // members a room admits; 0: no cap
	meeting    *codec.Meeting // score layout
}

// roomPlanner is what roomModel.plan works with: the settings, a scratch
// that each plan reuses, and slabs that the tops and states plans return
// are cut from, so that a room's plan costs no allocation for its buffers.
// Its zero buffers are ready to use. It is not safe for concurrent use.
type roomPlanner struct {
	roomConfig

	index   map[string]int // a user's entry in updates, while folding several parts
	updates []memberChange // the update's members folded, then those changed

	// Slabs: what is cut from them is never handed out again, so it lives
	// as long as the plans that hold it.
	ranked []ranking.Ranked
	scores []float64
	states []ranking.RoomState
}

// roomPlan is what a room update did to a room model.
type roomPlan struct {
	// changed are the members whose state changed, in order of their first
	// update (one entry per user, however many parts updated it), each with
	// its new state and score. Its array is the planner's scratch: it holds
	// until the planner's next plan.
	changed []memberChange
	// refused are the new users the members cap kept out, in order of
	// their first update.
	refused []string
	// top is the ranking's best topN members after the update, best first,
	// when hasTop: the room has at most topMax members.
	top    []ranking.Ranked
	hasTop bool
	// merged is the state the stable step was taken on, nil when it was
	// not taken; update is what the step stores, nil when it changed
	// nothing.
	merged *ranking.RoomState
	update *ranking.StableUpdate
	// rebuilt: the plan makes the room's ranking again (see
	// roomModel.rescore), and changed holds every member.
	rebuilt bool
}

// memberChange is a member's new state and score. at is the member's
// position in the room's list; added says that the update admitted it (at
// the end of the list, in the order of the plan's changes).
type memberChange struct {
	user  string
	at    int
	added bool
	state ranking.MemberState
	score float64
}

// isRanked reports whether the member is in the ranking with its new state.
func (c *memberChange) isRanked() bool { return c.score != ranking.Unranked }

// plan merges the update u into the room's member states and returns what
// changed, with the room's new top when it ranks it, and, when merge is not
// nil, the stable step taken on the state the update leaves. acked is the
// seq of the output whose acknowledgement u carries (0: none).
//
// Every state is taken in the form the sink stores it (see foldUpdates),
// and each member's updates are merged with ranking.MemberState.Merge. New
// users are admitted up to the members cap in order of their first update.
// The ranking's version counts the updates that change any member's state.
//
// The stable step is taken when the room has its top, its stable list is
// known, u is not a read (no parts), and no output of it awaits an
// acknowledgement but the one u carries: the processor must publish such
// an output again, and only the stored room holds its bytes.
//
// On an error the room holds the states the returned plan's changed
// report: none, unless the error is the stable step's.
func (m *roomModel) plan(u *ranking.RoomUpdate, acked int64, merge ranking.StableStep, p *roomPlanner) (roomPlan, error) {
	var rp roomPlan
	if err := p.foldUpdates(u); err != nil {
		return rp, err
	}
	changed, refused, err := m.diff(u.Room, p.updates, &p.roomConfig)
	if err != nil {
		return rp, err
	}
	rp.changed, rp.refused = changed, refused
	m.commit(rp.changed)
	if m.rescore && len(m.list) > 0 {
		rp.changed = m.withEveryMember(rp.changed)
		rp.rebuilt, m.rescore = true, false
	}
	if !m.partial && len(m.list) <= p.topMax {
		rp.top, rp.hasTop = m.top(cut(&p.ranked, p.topN), p.topN), true
	}
	cs := &m.stable
	pending := cs.pending
	if pending == acked {
		pending = 0
	}
	if merge == nil || !rp.hasTop || !cs.known || pending != 0 || len(u.Parts) == 0 {
		return rp, nil
	}
	return rp, m.step(&rp, u.Room, merge, p)
}

// foldUpdates sets p.updates to the update's members, one per user in
// order of first appearance, a user's updates from several parts merged.
// Each state is taken through its stored (packed) form, which is all that
// a state read back holds.
func (p *roomPlanner) foldUpdates(u *ranking.RoomUpdate) error {
	p.updates = p.updates[:0]
	several := len(u.Parts) > 1
	if several {
		if p.index == nil {
			p.index = make(map[string]int)
		}
		clear(p.index)
	}
	var buf [ranking.StateSize]byte
	for _, part := range u.Parts {
		for k := range part.Members {
			mu := &part.Members[k]
			s := mu.State
			if err := s.UnmarshalBinary(s.AppendBinary(buf[:0])); err != nil {
				return err
			}
			if several {
				if j, ok := p.index[mu.UserID]; ok {
					p.updates[j].state.Merge(&s)
					continue
				}
				p.index[mu.UserID] = len(p.updates)
			}
			p.updates = append(p.updates, memberChange{user: mu.UserID, state: s})
		}
	}
	return nil
}

// diff merges the folded updates upd into the room's states without
// changing the room: it keeps, in upd's array, the members whose stored
// state changes, each with its new state, score and position (a new member
// at the end of the list, in order), and returns them with the new users
// that the members cap refuses.
func (m *roomModel) diff(room string, upd []memberChange, cfg *roomConfig) (changed []memberChange, refused []string, err error) {
	changed = upd[:0]
	added := 0 // new members so far: the next one's position is len(m.list)+added
	var buf [ranking.StateSize]byte
	for _, c := range upd {
		at := m.get(c.user)
		var old ranking.MemberState
		if at >= 0 {
			old = m.list[at].state
		} else {
			if cfg.maxMembers > 0 && m.size()+added >= cfg.maxMembers {
				refused = append(refused, c.user)
				continue
			}
			at, c.added = len(m.list)+added, true
			added++
		}
		s := old
		s.Merge(&c.state)
		if err := s.UnmarshalBinary(s.AppendBinary(buf[:0])); err != nil {
			return nil, nil, err
		}
		if !c.added && s == old {
			continue
		}
		score, err := scoreOf(&s, cfg.meeting)
		if err != nil {
			return nil, nil, fmt.Errorf("sink: apply room %q: time of %s outside the score layout: %w", room, c.user, err)
		}
		c.at, c.state, c.score = at, s, score
		changed = append(changed, c)
	}
	return changed, refused, nil
}

// commit stores the changes that diff returned.
func (m *roomModel) commit(changed []memberChange) {
	for i := range changed {
		c := &changed[i]
		if c.added {
			m.add(c.user, c.state, c.score)
			m.count++
		} else {
			m.update(c.at, c.state, c.score)
		}
	}
}

// withEveryMember returns changed with every other member of the room
// appended, as it is: the changes of a plan that makes the ranking again.
func (m *roomModel) withEveryMember(changed []memberChange) []memberChange {
	in := make([]bool, len(m.list))
	for i := range changed {
		in[changed[i].at] = true
	}
	for i := range m.list {
		if mem := &m.list[i]; !in[i] {
			changed = append(changed, memberChange{user: mem.user, at: i, state: mem.state, score: mem.score})
		}
	}
	return changed
}

// step takes the stable step on the state the update rp leaves, whose
// ranking version it counts, and records it in rp.
func (m *roomModel) step(rp *roomPlan, room string, merge ranking.StableStep, p *roomPlanner) error {
	cs := &m.stable
	st := &cut(&p.states, 1)[:1][0]
	*st = ranking.RoomState{Room: room, Applied: true, Seq: cs.seq, Stable: cs.list, Version: cs.version,
		HState: cs.state, Top: rp.top, Refused: rp.refused}
	if len(rp.changed) > 0 {
		st.Version++
	}
	st.StableScores = cut(&p.scores, len(st.Stable))
	m.stableScores(st)
	up, store, err := merge.Step(st)
	if err != nil {
		return err
	}
	rp.merged = st
	if store {
		up.Room, up.PrevSeq, up.Version, up.PrevState = room, cs.seq, st.Version, cs.state
		rp.update = new(up) // a copy: up itself stays off the heap when nothing is stored
	}
	return nil
}

// stableScores sets the scores of st's stable members from the room, in
// st.StableScores's array when it has room.
func (m *roomModel) stableScores(st *ranking.RoomState) {
	st.StableScores = st.StableScores[:0]
	for _, user := range st.Stable {
		score := ranking.Unranked
		if at := m.get(user); at >= 0 {
			score = m.list[at].score
		}
		st.StableScores = append(st.StableScores, score)
	}
}

// update stores the new state and score of the member at i.
func (m *roomModel) update(i int, s ranking.MemberState, score float64) {
	mem := &m.list[i]
	m.ranked += rankedDelta(mem.score, score)
	mem.state, mem.score = s, score
}

// add appends a member not yet in the room.
func (m *roomModel) add(user string, s ranking.MemberState, score float64) {
	if m.index == nil {
		m.index = make(map[string]int32)
	}
	m.index[user] = int32(len(m.list))
	m.list = append(m.list, roomMember{user: user, state: s, score: score})
	m.ranked += rankedDelta(ranking.Unranked, score)
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
func (m *roomModel) get(user string) int {
	if i, ok := m.index[user]; ok {
		return int(i)
	}
	return -1
}

// top fills dst with the ranking's best n members as ZREVRANGE returns
// them: score descending, equal scores by user id descending (Redis orders
// equal scores by their bytes).
func (m *roomModel) top(dst []ranking.Ranked, n int) []ranking.Ranked {
	dst = dst[:0]
	if n <= 0 {
		return dst
	}
	for i := range m.list {
		mem := &m.list[i]
		if mem.score == ranking.Unranked {
			continue
		}
		if len(dst) == n && !better(mem.score, mem.user, &dst[n-1]) {
			continue
		}
		j := len(dst)
		if j < n {
			dst = append(dst, ranking.Ranked{})
		} else {
			j = n - 1
		}
		for j > 0 && better(mem.score, mem.user, &dst[j-1]) {
			dst[j] = dst[j-1]
			j--
		}
		dst[j] = ranking.Ranked{UserID: mem.user, Score: mem.score}
	}
	return dst
}

// better reports whether a member with score and user ranks before than.
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

// cut returns an empty slice of capacity n cut from slab (a new slab when
// it has no room left); an append beyond n moves the slice out of the slab.
func cut[T any](slab *[]T, n int) []T {
	if cap(*slab)-len(*slab) < n {
		*slab = make([]T, 0, 64*n)
	}
	at := len(*slab)
	*slab = (*slab)[:at+n]
	return (*slab)[at : at : at+n]
}
