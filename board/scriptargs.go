package board

// The arguments (ARGV) of the scripts in lua/: one struct per script, whose
// fields are the script's arguments in order, and its append method, the
// only writer of that script's ARGV. Each script's header lists the same
// names in the same order, and its first statements read ARGV into a table
// A under those names, which the rest of the script reads instead of ARGV
// (TestScriptArgs checks the names and that nothing else reads ARGV).
//
// An optional number sent as "" when absent is a field with its rule
// beside it. The booleans are sent as 1 and 0.

// applyArgs is the ARGV of lua/apply.lua: one call's share of a batch.
type applyArgs struct {
	prefix   string // P: the prefix of the call's keys
	gen      string // the generation adopted ("" = unchecked)
	kind     string // kindPeriod … kindTotal (scriptKind)
	op       string // opIncr, opBest or opSet
	tie      bool   // first-reached
	rb       int    // the score's reached bits
	res      int64  // the tie resolution, ms
	maxTotal int64  // the largest total ranked (decay: the largest sum)
	origin   int64  // rolling and total boards: the epoch, Unix ms
	windows  string // windowsArg
	check    string // checkRemovals when the call removes from a rolling board's slices, else ""
	floor    string // floorArg ("" = none)
	halfLife int64  // decay: the half-life, ms; 0: no decay (sent as "")
	target   int64  // decay: the base target (sent as "" without decay)
	expire   int64  // periodic: when the period's ranges and counters expire, Unix ms (sent as "" for other kinds)
	lengths  string // lengthsArg ("" but for windows boards)
	parts    []applyPart
}

// applyPart is one part of an apply call: a topic-partition's offsets
// first..last.
type applyPart struct {
	tp       string        // "topic/partition"
	first    int64         // the part's first offset
	last     int64         // and its last
	each     bool          // re-sent event by event (Store.Apply)
	removals []entry       // the remove events: member, settled, offset, labels
	buckets  []applyBucket // the other events, by bucket
}

// applyBucket is the events of one bucket of a part.
type applyBucket struct {
	bucket  string  // a period's label, a slice index, or a total board's bucket
	origin  int64   // the period's start, Unix ms; a rolling decay board's slice: its half-life index
	expire  int64   // when the period's keys, or a total board's id set, expire (Unix ms)
	entries []entry // member, value, ts, id, offset
}

func (a *applyArgs) append(dst []any) []any {
	halfLife, target, expire := any(""), any(""), any("")
	if a.halfLife > 0 {
		halfLife, target = a.halfLife, a.target
	}
	if a.kind == kindPeriod || a.kind == kindCompact {
		expire = a.expire
	}
	dst = append(dst, a.prefix, a.gen, a.kind, a.op, boolArg(a.tie), a.rb, a.res, a.maxTotal, a.origin,
		a.windows, a.check, a.floor, halfLife, target, expire, a.lengths, len(a.parts))
	for _, p := range a.parts {
		dst = append(dst, p.tp, p.first, p.last, boolArg(p.each), len(p.removals))
		for _, e := range p.removals {
			dst = append(dst, e.member, boolArg(e.rm.settled), e.offset, len(e.rm.labels))
			for _, l := range e.rm.labels {
				dst = append(dst, l)
			}
		}
		dst = append(dst, len(p.buckets))
		for _, b := range p.buckets {
			dst = append(dst, b.bucket, b.origin, b.expire, len(b.entries))
			for _, e := range b.entries {
				dst = append(dst, e.member, e.value, e.ts, e.id, e.offset)
			}
		}
	}
	return dst
}

// expireArgs is the ARGV of lua/expire.lua: a rolling board's expiry.
type expireArgs struct {
	prefix   string   // P
	tie      bool     // first-reached
	rb       int      // the score's reached bits
	res      int64    // the tie resolution, ms
	maxTotal int64    // the largest total ranked
	origin   int64    // the epoch, Unix ms
	windows  string   // windowsArg
	floor    string   // floorArg ("" = none)
	neg      bool     // a member whose window sums are all 0 keeps its state while a window holds its newest slice
	slice    int64    // the board's slice, ms
	through  []int64  // per window, the last of its slices that has left it (boarddef.Board.ExpiredThrough); one per window, no count
	slices   []string // the keys of the slices given, without the prefix P
}

func (a *expireArgs) append(dst []any) []any {
	dst = append(dst, a.prefix, boolArg(a.tie), a.rb, a.res, a.maxTotal, a.origin, a.windows, a.floor, boolArg(a.neg), a.slice)
	for _, t := range a.through {
		dst = append(dst, t)
	}
	dst = append(dst, len(a.slices))
	for _, k := range a.slices {
		dst = append(dst, k)
	}
	return dst
}

// expireWindowsArgs is the ARGV of lua/expirew.lua: a windows board's
// expiry.
type expireWindowsArgs struct {
	prefix   string   // P
	tie      bool     // first-reached
	rb       int      // the score's reached bits
	res      int64    // the tie resolution, ms
	maxTotal int64    // the largest total ranked
	origin   int64    // the epoch, Unix ms
	windows  string   // windowsArg
	floor    string   // floorArg ("" = none)
	neg      bool     // negative values allowed
	lengths  string   // lengthsArg
	cut      int64    // now − grace, Unix ms
	through  []int64  // per window, the last of its slices that has left it (boarddef.Board.ExpiredThrough); one per window, no count
	idSets   []string // the keys of the id sets given, without the prefix P
}

func (a *expireWindowsArgs) append(dst []any) []any {
	dst = append(dst, a.prefix, boolArg(a.tie), a.rb, a.res, a.maxTotal, a.origin, a.windows, a.floor, boolArg(a.neg),
		a.lengths, a.cut)
	for _, t := range a.through {
		dst = append(dst, t)
	}
	dst = append(dst, len(a.idSets))
	for _, k := range a.idSets {
		dst = append(dst, k)
	}
	return dst
}

// rebaseArgs is the ARGV of lua/rebase.lua: a decay board's base moved
// without an event.
type rebaseArgs struct {
	prefix   string // P
	target   int64  // the base target
	floor    string // floorArg ("" = none)
	maxTotal int64  // the largest total ranked
	kind     string // kindTotal or kindRolling
	origin   int64  // rolling: the epoch, Unix ms; else 0
}

func (a *rebaseArgs) append(dst []any) []any {
	return append(dst, a.prefix, a.target, a.floor, a.maxTotal, a.kind, a.origin)
}

// readArgs is the ARGV of lua/read.lua: a page of a ranking.
type readArgs struct {
	mode   string // readTop, readMember or readAround
	member string // readMember, readAround: the member ("" for readTop)
	offset int    // readTop: the first rank, 0-based
	n      int    // readTop: the number of members; readAround: the members on each side
}

func (a *readArgs) append(dst []any) []any {
	return append(dst, a.mode, a.member, a.offset, a.n)
}

// membersArgs is the ARGV of lua/members.lua: several members' standings
// in the rankings of one hash slot.
type membersArgs struct {
	members   []string // sent as their number, then each
	keyCounts []int    // per ranking, the number of KEYS it takes (2, or 3 with a base hash); no count
}

func (a *membersArgs) append(dst []any) []any {
	dst = append(dst, len(a.members))
	for _, m := range a.members {
		dst = append(dst, m)
	}
	for _, n := range a.keyCounts {
		dst = append(dst, n)
	}
	return dst
}

// settleArgs is the ARGV of lua/settle.lua: one step of a period's
// settlement.
type settleArgs struct {
	gen         string // the generation adopted ("" = unchecked)
	label       string // the period's label
	closedAt    int64  // the period's end + grace, Unix ms
	top         int    // settle-top
	page        int    // the members copied per call
	expire      int64  // when the snapshot keys expire, Unix ms
	start       int64  // the period's start, Unix ms
	head        string // the record's JSON head: {"board":…,"period":…
	scale       int64  // the board's scale
	floor       string // floorArg ("" = none: the total is the sum)
	reachedBits string // compactArg: the reached bits when the score holds the state, else ""
	stateExpire int64  // when the period's settle state expires, Unix ms
}

func (a *settleArgs) append(dst []any) []any {
	return append(dst, a.gen, a.label, a.closedAt, a.top, a.page, a.expire, a.start, a.head, a.scale, a.floor,
		a.reachedBits, a.stateExpire)
}

// settledArgs is the ARGV of lua/settled.lua: a settled period recorded in
// its board's slot.
type settledArgs struct {
	gen       string // the generation adopted ("" = unchecked)
	label     string // the period's label
	record    string // the record ("" when the period's copy is gone)
	start     int64  // the period's start, Unix ms
	retention int    // settle-retention
}

func (a *settledArgs) append(dst []any) []any {
	return append(dst, a.gen, a.label, a.record, a.start, a.retention)
}

// outboxArgs is the ARGV of lua/outbox.lua.
type outboxArgs struct {
	action string // outboxClaim or outboxAck
	token  string // outboxClaim: the claimer's token
	now    int64  // outboxClaim: Unix ms
	lease  int64  // outboxClaim: ms
	label  string // outboxAck: the record's period
}

func (a *outboxArgs) append(dst []any) []any {
	return append(dst, a.action, a.token, a.now, a.lease, a.label)
}

// restoreArgs is the ARGV of lua/restore.lua: a board's settlement
// restored from its published records.
type restoreArgs struct {
	newest    string           // the newest settled label
	retention int              // settle-retention
	periods   []restoredPeriod // the rest of ARGV, no count
}

// restoredPeriod is a settled period restore.lua indexes.
type restoredPeriod struct {
	label string
	start int64 // Unix ms
}

func (a *restoreArgs) append(dst []any) []any {
	dst = append(dst, a.newest, a.retention)
	for _, p := range a.periods {
		dst = append(dst, p.label, p.start)
	}
	return dst
}

// restorePeriodArgs is the ARGV of lua/restoreperiod.lua: one settled
// period restored in its own slot.
type restorePeriodArgs struct {
	label       string   // the period's label
	snapExpire  int64    // when the snapshot expires, Unix ms
	stateExpire int64    // when the settle state expires, Unix ms
	info        string   // "members closed_at"
	entries     []string // "total reached member", in rank order: the rest of ARGV, no count
}

func (a *restorePeriodArgs) append(dst []any) []any {
	dst = append(dst, a.label, a.snapExpire, a.stateExpire, a.info)
	for _, e := range a.entries {
		dst = append(dst, e)
	}
	return dst
}
