-- Code generated from luaconsts.go by go generate; DO NOT EDIT.
--
-- Each constant of luaconsts.go as a local named in upper snake case; a
-- script includes this file first ("--! include consts.lua").

-- The board kinds of the scripts' kind argument (apply.lua, rebase.lua;
-- scriptKind).
local KIND_PERIOD = 'p' -- a periodic board
local KIND_COMPACT = 'c' -- a periodic board whose score holds the member state (Board.ScoreHoldsState)
local KIND_ROLLING = 'r' -- a rolling board: one hash per slice
local KIND_WINDOWS = 'v' -- a windows board: each member's slices packed in its state (packed.lua)
local KIND_TOTAL = 't' -- a total board

-- The operations of apply.lua's op argument (scriptOp).
local OP_INCR = 'incr' -- add the value to the total
local OP_BEST = 'best' -- keep the highest value, the earliest on a tie
local OP_SET = 'set' -- keep the latest value, the highest on a tie

-- CHECK_REMOVALS is apply.lua's check argument when the call removes
-- members from a rolling board's slices, whose keys the script first finds
-- declared ("" for any other call).
local CHECK_REMOVALS = 'R'

-- The modes of read.lua.
local READ_TOP = 'top' -- a page of the ranking from a rank
local READ_MEMBER = 'member' -- one member's standing
local READ_AROUND = 'around' -- a member and its neighbours

-- The actions of outbox.lua.
local OUTBOX_CLAIM = 'claim' -- claim the records no claim holds
local OUTBOX_ACK = 'ack' -- delete a published record and its claim

-- The scripts' replies that are not counts.
local REPLY_RESET = 'reset' -- the generation differs: nothing written (apply.lua, settle.lua, settled.lua)
local REPLY_REPLAN = 'replan' -- apply.lua met a slice key it was not given: nothing written
local REPLY_DONE = 'done' -- settle.lua: the period was settled before
local REPLY_MORE = 'more' -- settle.lua: a page copied, more to copy
local REPLY_SETTLED = 'settled' -- settle.lua: the period is settled

-- The hash fields both sides name (doc.go, "Redis keys").
local FIELD_GEN = 'gen' -- the generation adopted, in the watermark hash P+"w"
local FIELD_FROZEN = 'frozen' -- the newest period frozen, in the settle state P+"st"
local FIELD_LATE = 'late' -- the counters P+"n": events found late
local FIELD_SATURATED = 'saturated' -- the counters P+"n": totals saturated

-- MAX_RANGES bounds the applied ranges kept per board and
-- topic-partition (ranges.lua).
local MAX_RANGES = 64
-- MAX_SUM is the largest sum the scripts keep, exact in a Lua number
-- (codec.MaxAmount).
local MAX_SUM = 9007199254740991
