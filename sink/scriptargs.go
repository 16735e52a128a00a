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
// fast.lua takes a head that is the same for every call of a Store
// (fastArgs: boxed once, in New, one for Apply and one for Rebuild) and then
// one record per room (fastRoomArgs), which carries only what differs from
// room to room; load.lua takes one record per room (loadRoomArgs).
//
// An optional value sent as "" when absent is a field with its rule beside
// it. The booleans are sent as 1 and 0.

// loadArgs is the head of lua/load.lua's ARGV, sent once per call; one
// record per room follows it (loadRoomArgs).
type loadArgs struct {
	whole int    // the largest room read whole (members): the cache's bound, at least goTopMax
	rules string // the rules version the sink scores under: a room under others is read whole
}

// append appends the arguments to dst.
func (a *loadArgs) append(dst []any) []any {
	return append(dst, a.whole, a.rules)
}

// loadRoomArgs is one room's record in lua/load.lua's ARGV.
type loadRoomArgs struct {
	parts []ranking.Part // the parts whose watermarks the reply carries: sent as their number, then their names
	users []ranking.Part // the same parts: their members' users are sent as their number, then each (read from a room read in part)
}

// append appends the record to dst; names boxes the parts' names.
func (a *loadRoomArgs) append(dst []any, names *stateCache) []any {
	dst = append(dst, len(a.parts))
	for i := range a.parts {
		dst = append(dst, names.partArg(&a.parts[i]))
	}
	n := 0
	for i := range a.users {
		n += len(a.users[i].Members)
	}
	dst = append(dst, n)
	for i := range a.users {
		for k := range a.users[i].Members {
			dst = append(dst, a.users[i].Members[k].UserID)
		}
	}
	return dst
}

// fastArgs is the head of lua/fast.lua's ARGV, sent once per call; one
// record per room follows it (fastRoomArgs), in the order of KEYS.
type fastArgs struct {
	ttl   int64  // Config.RoomTTL, ms
	topN  int    // Config.TopN: the raw top list a record with top asks for
	rules string // the rules version the sink scored under (codec.Meeting.Version)
	force bool   // apply parts at or below their watermark too (Store.Rebuild)
}

// append appends the arguments to dst.
func (a *fastArgs) append(dst []any) []any {
	return append(dst, a.ttl, a.topN, a.rules, a.force)
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
	expect  string         // the state token the plan was made from ("": the room has none)
	next    string         // the new token ("": the member states are unchanged)
	ranking string         // rankingSame, rankingChanged or rankingRebuilt
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
	dst = append(dst, ar.str(a.expect), next, ar.str(a.ranking), a.top, ack, ar.str(a.refresh), ar.str(a.merge))
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
