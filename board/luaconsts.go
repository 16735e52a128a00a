package board

// The constants this package shares with its Lua scripts, declared here
// alone: go generate writes each into lua/consts.lua as a Lua local named
// in upper snake case (kindPeriod is KIND_PERIOD there), and
// TestConstsLuaCurrent fails when that file is not what this one makes.
// Every script includes consts.lua first. This file imports nothing (see
// internal/luaconst).

//go:generate go run github.com/rostrumhq/rostrum/internal/luaconst/gen

// The board kinds of the scripts' kind argument (apply.lua, rebase.lua;
// scriptKind).
const (
	kindPeriod  = "p" // a periodic board
	kindCompact = "c" // a periodic board whose score holds the member state (Board.ScoreHoldsState)
	kindRolling = "r" // a rolling board: one hash per slice
	kindWindows = "v" // a windows board: each member's slices packed in its state (packed.lua)
	kindTotal   = "t" // a total board
)

// The operations of apply.lua's op argument (scriptOp).
const (
	opIncr = "incr" // add the value to the total
	opBest = "best" // keep the highest value, the earliest on a tie
	opSet  = "set"  // keep the latest value, the highest on a tie
)

// checkRemovals is apply.lua's check argument when the call removes
// members from a rolling board's slices, whose keys the script first finds
// declared ("" for any other call).
const checkRemovals = "R"

// The modes of read.lua.
const (
	readTop    = "top"    // a page of the ranking from a rank
	readMember = "member" // one member's standing
	readAround = "around" // a member and its neighbours
)

// The actions of outbox.lua.
const (
	outboxClaim = "claim" // claim the records no claim holds
	outboxAck   = "ack"   // delete a published record and its claim
)

// The scripts' replies that are not counts.
const (
	replyReset   = "reset"   // the generation differs: nothing written (apply.lua, settle.lua, settled.lua)
	replyReplan  = "replan"  // apply.lua met a slice key it was not given: nothing written
	replyDone    = "done"    // settle.lua: the period was settled before
	replyMore    = "more"    // settle.lua: a page copied, more to copy
	replySettled = "settled" // settle.lua: the period is settled
)

// The hash fields both sides name (doc.go, "Redis keys").
const (
	fieldGen       = "gen"       // the generation adopted, in the watermark hash P+"w"
	fieldFrozen    = "frozen"    // the newest period frozen, in the settle state P+"st"
	fieldLate      = "late"      // the counters P+"n": events found late
	fieldSaturated = "saturated" // the counters P+"n": totals saturated
)

const (
	// maxRanges bounds the applied ranges kept per board and
	// topic-partition (ranges.lua).
	maxRanges = 64
	// maxSum is the largest sum the scripts keep, exact in a Lua number
	// (codec.MaxAmount).
	maxSum = 1<<53 - 1
)
