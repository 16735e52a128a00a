package sink

import "github.com/rostrumhq/rostrum/ranking"

// The arguments (ARGV) of the scripts in lua/: one struct per script, or
// per section of a script's ARGV, whose fields are the arguments in order,
// and its append method, the only writer of them. Each script's header
// lists the same names in the same order, and its first statements read
// ARGV into a table A under those names, which the rest of the script
// reads instead of ARGV (TestScriptArgs checks the names and that nothing
// else reads ARGV).
//
// The two room scripts take a head that is the same for every call of a
// Store (applyArgs, fastArgs: boxed once, in New) and then the room's own
// arguments: apply.lua one room's (applyRoomArgs), fast.lua one record per
// room (fastRoomArgs), which carries only what differs from room to room.
//
// An optional value sent as "" when absent is a field with its rule beside
// it. The booleans are sent as 1 and 0.

// applyArgs is the head of lua/apply.lua's ARGV: the Store's meeting
// rules and settings.
type applyArgs struct {
	ttl            int64  // Config.RoomTTL, ms
	topN           int    // Config.TopN
	epoch          int64  // the score's epoch, Unix ms
	spotlightMul   uint64 // the score of one step of each rule field (codec.Meeting.Multiplier; 0: the rules do not rank on it)
	screenShareMul uint64
	audioMul       uint64
	volumeMul      uint64
	videoMul       uint64
	roleMul        uint64
	unit           int64  // the score's time unit, ms
	rules          string // the rules version (codec.Meeting.Version)
	maxMembers     int    // Config.MaxMembers (0: no cap)
}

// append appends the arguments to dst.
func (a *applyArgs) append(dst []any) []any {
	return append(dst, a.ttl, a.topN, a.epoch, a.spotlightMul, a.screenShareMul, a.audioMul, a.volumeMul,
		a.videoMul, a.roleMul, a.unit, a.rules, a.maxMembers)
}

// applyRoomArgs is the rest of lua/apply.lua's ARGV: the room's share of
// a batch.
type applyRoomArgs struct {
	force bool           // apply parts at or below their watermark too (Store.Rebuild)
	token string         // the new state token ("" without a state cache)
	want  bool           // reply with every member's state, for the state cache
	parts []ranking.Part // sent as their number, then each: its name, last offset, and its members' (user, packed update) pairs
}

// append appends the arguments to dst.
func (a *applyRoomArgs) append(dst []any) []any {
	dst = append(dst, a.force, a.token, a.want, len(a.parts))
	for i := range a.parts {
		p := &a.parts[i]
		dst = append(dst, partName(p), p.Last, len(p.Members))
		for k := range p.Members {
			m := &p.Members[k]
			dst = append(dst, m.UserID, m.State.AppendBinary(make([]byte, 0, ranking.StateSize)))
		}
	}
	return dst
}

// applyRoomBound returns at most how many arguments applyRoomArgs appends
// for u.
func applyRoomBound(u *ranking.RoomUpdate) int {
	n := 4
	for i := range u.Parts {
		n += 3 + 2*len(u.Parts[i].Members)
	}
	return n
}

// fastArgs is the head of lua/fast.lua's ARGV, sent once per call; one
// record per room follows it (fastRoomArgs), in the order of KEYS.
type fastArgs struct {
	ttl   int64  // Config.RoomTTL, ms
	topN  int    // Config.TopN: the raw top list a record with top asks for
	rules string // the rules version the sink scored under (codec.Meeting.Version)
}

// append appends the arguments to dst.
func (a *fastArgs) append(dst []any) []any {
	return append(dst, a.ttl, a.topN, a.rules)
}

// fastRoomArgs is one room's record in lua/fast.lua's ARGV. Its values are
// boxed into the plan's arena (see arena), so that encoding a room costs
// no allocation of its own.
//
// The record's lists follow its fields, in the order the script's
// commands take them, so that the script makes the record one table at
// once: the parts' names and their last offsets, the members' (user,
// packed state) pairs for HSET, the ranked members' (score, user) pairs
// for ZADD and the others' users for ZREM.
type fastRoomArgs struct {
	expect  string         // the state token the cache holds
	next    string         // the new token ("": the member states are unchanged)
	bump    bool           // bump the ranking version
	top     bool           // reply with the raw top-N (false: the sink ranks it from its cache)
	ack     int64          // the seq of an output of the room just published (0: none, sent as "")
	refresh string         // ttlNone, ttlRanking or ttlAll (Store.ttlMode)
	merge   string         // mergeNone, mergeMerged, mergeStore or mergeState
	seq     int64          // the seq merged from; sent with every mode but mergeNone
	version int64          // the ranking version merged from; likewise
	hstate  string         // the hysteresis state merged from ("": none); likewise
	list    string         // the new stable list, comma-separated; sent with mergeStore only
	out     []byte         // its output record; likewise
	state   string         // the new hysteresis state ("": none); sent with mergeStore and mergeState
	parts   []ranking.Part // sent as their number, then in the lists
	members []change       // the members whose state changes: sent as their number, then in the lists
	ranked  int            // how many of members are ranked
}

// append appends the record to dst, boxing into ar; names boxes the
// parts' names.
func (a *fastRoomArgs) append(dst []any, ar *arena, names *stateCache) []any {
	next, ack := any(""), any("")
	if a.next != "" {
		next = ar.str(a.next)
	}
	if a.ack != 0 {
		ack = ar.num(a.ack)
	}
	dst = append(dst, ar.str(a.expect), next, a.bump, a.top, ack, ar.str(a.refresh), ar.str(a.merge))
	if a.merge != mergeNone {
		dst = append(dst, ar.num(a.seq), ar.num(a.version), ar.str(a.hstate))
	}
	if a.merge == mergeStore {
		dst = append(dst, ar.str(a.list), ar.raw(a.out))
	}
	if a.merge == mergeStore || a.merge == mergeState {
		dst = append(dst, ar.str(a.state))
	}
	dst = append(dst, len(a.parts), len(a.members), a.ranked)
	for i := range a.parts {
		dst = append(dst, names.partArg(&a.parts[i]))
	}
	for i := range a.parts {
		dst = append(dst, ar.num(a.parts[i].Last))
	}
	for i := range a.members {
		m := &a.members[i]
		start := len(ar.packed)
		ar.packed = m.state.AppendBinary(ar.packed)
		dst = append(dst, m.arg, ar.raw(ar.packed[start:len(ar.packed):len(ar.packed)]))
	}
	for i := range a.members {
		if m := &a.members[i]; m.score != ranking.Unranked {
			dst = append(dst, ar.num(int64(m.score)), m.arg)
		}
	}
	for i := range a.members {
		if m := &a.members[i]; m.score == ranking.Unranked {
			dst = append(dst, m.arg)
		}
	}
	return dst
}

// fastRoomBound returns at most how many arguments fastRoomArgs appends
// for a room of parts parts and members changed members.
func fastRoomBound(parts, members int) int { return 16 + 2*parts + 4*members }

// commitArgs is the ARGV of lua/commit.lua: a room's stable update stored
// under a compare-and-set.
type commitArgs struct {
	seq       int64  // the seq read
	version   int64  // the ranking version read
	list      string // the new list, comma-separated
	out       []byte // its output record
	ttl       any    // Config.RoomTTL, ms (Store.ttlArg, boxed once)
	prevState string // the hysteresis state read ("": none)
	state     string // the new hysteresis state ("": none)
	withList  bool   // store the list and its output (false: the state only)
}

// append appends the arguments to dst.
func (a *commitArgs) append(dst []any) []any {
	return append(dst, a.seq, a.version, a.list, a.out, a.ttl, a.prevState, a.state, a.withList)
}

// ackArgs is the ARGV of lua/ack.lua: rooms' published outputs.
type ackArgs struct {
	acks []ranking.Ack // each room's published seq (Ack.Seq), in the order of KEYS; no count
}

// append appends the arguments to dst.
func (a *ackArgs) append(dst []any) []any {
	for i := range a.acks {
		dst = append(dst, a.acks[i].Seq)
	}
	return dst
}

// restoreArgs is the ARGV of lua/restore.lua: a room's stable list seeded
// from its last published output.
type restoreArgs struct {
	seq   int64  // the seed's seq
	list  string // its list, comma-separated
	ttl   any    // Config.RoomTTL, ms (Store.ttlArg, boxed once)
	state string // its hysteresis state ("": none)
}

// append appends the arguments to dst.
func (a *restoreArgs) append(dst []any) []any {
	return append(dst, a.seq, a.list, a.ttl, a.state)
}

// settleArgs is the ARGV of lua/settle.lua: a room's due entry moved or
// removed.
type settleArgs struct {
	room string // the room, the due set's member
	at   int64  // the deadline read, Unix ms
	next int64  // the next deadline, Unix ms (0: none, the entry is removed)
}

// append appends the arguments to dst.
func (a *settleArgs) append(dst []any) []any {
	return append(dst, a.room, a.at, a.next)
}
