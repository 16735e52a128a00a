package sink

// Reading a room that the state cache does not hold, or holds stale
// (loadLua), and planning its update from what was read: the parts at or
// below their watermarks are left out here, in Go, so that fastLua's
// watermark check only ever refuses a part that another writer applied
// after the read. A room larger than the cache's bound is read in part
// (roomModel.partial): reading it whole before every write would cost in
// proportion to the room, not to the update.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rostrumhq/rostrum/ranking"
)

// loadedRoom is a room as loadLua read it: its model, stored under
// cr.token, and the watermarks of the parts of the update it was read for.
// It is not in the cache until an apply plans from it.
type loadedRoom struct {
	cr    *cachedRoom
	marks []int64 // each part's watermark, in the update's order (-1: none)
}

// parseLoad reads a room's reply of loadLua, read for the update u.
func (r *Store) parseLoad(vals []any, u *ranking.RoomUpdate) (*loadedRoom, error) {
	const head = 7 // the values before the watermarks
	np := len(u.Parts)
	if len(vals) < head+np+3 {
		return nil, fmt.Errorf("sink: read room %q: unexpected reply of %d values", u.Room, len(vals))
	}
	count, _ := vals[head+np].(int64)
	partial, _ := vals[head+np+1].(int64)
	n, _ := vals[head+np+2].(int64)
	pairs := vals[head+np+3:]
	if n < 0 || len(pairs) != 2*int(n) {
		return nil, fmt.Errorf("sink: read room %q: unexpected reply of %d values", u.Room, len(vals))
	}
	token, _ := vals[0].(string)
	rules, _ := vals[1].(string)
	cr := &cachedRoom{roomModel: newRoomModel(int(n)), token: token}
	for i := 0; i+1 < len(pairs); i += 2 {
		user, _ := pairs[i].(string)
		packed, _ := pairs[i+1].(string)
		var s ranking.MemberState
		err := s.UnmarshalBinary([]byte(packed))
		var score float64
		if err == nil {
			score, err = scoreOf(&s, r.opt.Meeting)
		}
		if err != nil {
			return nil, fmt.Errorf("sink: member state of %q in room %q: %w", user, u.Room, err)
		}
		cr.add(user, s, score)
	}
	// The room's scores were computed under other rules (or it has none
	// stored): its next write makes its ranking again (such a room is
	// read whole).
	cr.rescore = rules != r.opt.Meeting.Version()
	if partial == 1 {
		cr.partial, cr.count = true, int(count)
	}
	seq, _ := vals[2].(int64)
	list, _ := vals[3].(string)
	pending, _ := vals[4].(string)
	version, _ := vals[5].(int64)
	hstate, _ := vals[6].(string)
	cr.stable = roomStable{known: true, seq: seq, list: stableList(list), version: version, state: hstate}
	if pending != "" {
		cr.stable.pending = seq
	}
	lr := &loadedRoom{cr: cr, marks: make([]int64, np)}
	for k := range lr.marks {
		lr.marks[k], _ = vals[head+k].(int64)
	}
	r.cache.loaded.Add(1)
	return lr, nil
}

// unapplied returns u without the parts at or below their watermarks,
// which were applied before (a replay, or a consumer that lost its
// partition), and, with a members cap, the users of those parts that are
// not members: they were refused then, and a redelivered batch reports
// them again. A part that overlaps its watermark is applied whole: member
// states merge idempotently, so its applied events have no second effect.
func (lr *loadedRoom) unapplied(u *ranking.RoomUpdate, capped bool) (*ranking.RoomUpdate, []string) {
	var parts []ranking.Part
	var refused []string
	for k := range u.Parts {
		p := &u.Parts[k]
		if p.Last > lr.marks[k] {
			parts = append(parts, *p)
			continue
		}
		if !capped {
			continue
		}
		for _, m := range p.Members {
			if lr.cr.get(m.UserID) < 0 && !slices.Contains(refused, m.UserID) {
				refused = append(refused, m.UserID)
			}
		}
	}
	if len(parts) == len(u.Parts) {
		return u, refused
	}
	return &ranking.RoomUpdate{Room: u.Room, Parts: parts}, refused
}

// withRefused returns the users refused before a plan (first) followed by
// those its plan refused, each once.
func withRefused(before, plan []string) []string {
	if len(before) == 0 {
		return plan
	}
	out := slices.Clone(before)
	for _, user := range plan {
		if !slices.Contains(out, user) {
			out = append(out, user)
		}
	}
	return out
}

// stableList splits a stored stable list.
func stableList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
