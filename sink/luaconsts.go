package sink

// The constants this package shares with its Lua scripts, declared here
// alone: go generate writes each into lua/consts.lua as a Lua local named
// in upper snake case (mergeStore is MERGE_STORE there), and
// TestConstsLuaCurrent fails when that file is not what this one makes.
// Every script that uses one includes consts.lua first. This file imports
// nothing (see internal/luaconst).

//go:generate go run github.com/rostrumhq/rostrum/internal/luaconst/gen

// The merge modes of a fast.lua room record (fastRoomArgs.merge): how far
// the sink took the room's stable step before the apply.
const (
	mergeNone   = "none"   // not merged: the caller merges after the apply, from the reply
	mergeMerged = "merged" // merged before the apply, nothing to store
	mergeStore  = "store"  // store a new list, its output and the hysteresis state
	mergeState  = "state"  // store the hysteresis state only
)

// The TTL refreshes of a fast.lua room record (fastRoomArgs.refresh, see
// Store.ttlMode).
const (
	ttlNone    = "none"    // no key
	ttlRanking = "ranking" // the ranking only: the apply created it
	ttlAll     = "all"     // the room's three keys
)

// How a fast.lua room record changes the room's ranking
// (fastRoomArgs.ranking).
const (
	rankingSame    = "same"    // no ranked member is added, rescored or removed
	rankingChanged = "changed" // some are: the ranking version is bumped
	rankingRebuilt = "rebuilt" // the room was scored under other rules: the ranking is made again whole
)

// The first value of fast.lua's reply for a room it did not apply: nothing
// was written, the ack neither, and the sink reads the room (load.lua) and
// plans it again.
const (
	fastMoved  = -1 // the state token, the rules version or the merged-from stable state moved on
	fastBehind = -2 // a part is at or below its watermark
)

// The fields of a room's stable hash (Keys.Stable) that the scripts name
// (Go reads seq, list and h); the watermarks are fields too, one per
// "topic/partition" (partName).
//
//lint:ignore U1000 the scripts use every field through lua/consts.lua
const (
	fieldSeq     = "seq"     // the stable list's seq
	fieldList    = "list"    // the stable list, comma-separated user ids
	fieldVersion = "v"       // the ranking version, bumped by every apply that changes the ranking
	fieldPending = "pending" // the seq of an output not yet acknowledged as published
	fieldOut     = "out"     // that output's record
	fieldHState  = "h"       // the hysteresis state (stability.State's text)
	fieldToken   = "mv"      // the member states' token (stateCache)
	fieldRules   = "r"       // the rules version the room's scores were computed under
)
