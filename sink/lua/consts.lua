-- Code generated from luaconsts.go by go generate; DO NOT EDIT.
--
-- Each constant of luaconsts.go as a local named in upper snake case; a
-- script includes this file first ("--! include consts.lua").

-- The merge modes of a fast.lua room record (fastRoomArgs.merge): how far
-- the sink took the room's stable step before the apply.
local MERGE_NONE = 'none' -- not merged: the caller merges after the apply, from the reply
local MERGE_MERGED = 'merged' -- merged before the apply, nothing to store
local MERGE_STORE = 'store' -- store a new list, its output and the hysteresis state
local MERGE_STATE = 'state' -- store the hysteresis state only

-- The TTL refreshes of a fast.lua room record (fastRoomArgs.refresh, see
-- Store.ttlMode).
local TTL_NONE = 'none' -- no key
local TTL_RANKING = 'ranking' -- the ranking only: the apply created it
local TTL_ALL = 'all' -- the room's three keys

-- How a fast.lua room record changes the room's ranking
-- (fastRoomArgs.ranking).
local RANKING_SAME = 'same' -- no ranked member is added, rescored or removed
local RANKING_CHANGED = 'changed' -- some are: the ranking version is bumped
local RANKING_REBUILT = 'rebuilt' -- the room was scored under other rules: the ranking is made again whole

-- The first value of fast.lua's reply for a room it did not apply: nothing
-- was written, the ack neither, and the sink reads the room (load.lua) and
-- plans it again.
local FAST_MOVED = -1 -- the state token, the rules version or the merged-from stable state moved on
local FAST_BEHIND = -2 -- a part is at or below its watermark

-- The fields of a room's stable hash (Keys.Stable) that the scripts name
-- (Go reads seq, list and h); the watermarks are fields too, one per
-- "topic/partition" (partName).
local FIELD_SEQ = 'seq' -- the stable list's seq
local FIELD_LIST = 'list' -- the stable list, comma-separated user ids
local FIELD_VERSION = 'v' -- the ranking version, bumped by every apply that changes the ranking
local FIELD_PENDING = 'pending' -- the seq of an output not yet acknowledged as published
local FIELD_OUT = 'out' -- that output's record
local FIELD_H_STATE = 'h' -- the hysteresis state (stability.State's text)
local FIELD_TOKEN = 'mv' -- the member states' token (stateCache)
local FIELD_RULES = 'r' -- the rules version the room's scores were computed under
