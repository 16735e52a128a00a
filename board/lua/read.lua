-- read.lua (readLua in scripts.go): reads a page of a ranking and the
-- members' states atomically.
--
-- KEYS: 1 ranking zset, 2 member state hash, 3 (decay boards) the base
--       hash: its base is read in the same step as the sums
-- ARGV (readArgs in scriptargs.go), in order; the script reads
-- them into A under these names at its top, and nothing else reads ARGV:
--   mode      READ_TOP, READ_MEMBER or READ_AROUND (consts.lua)
--   member    READ_MEMBER, READ_AROUND: the member ('' for READ_TOP)
--   offset    READ_TOP: the first rank, 0-based
--   n         READ_TOP: the number of members; READ_AROUND: the members
--             listed on each side
--
-- Reply: {members in the zset, rank of the first listed (0-based), base
-- ('' without KEYS[3] or before the first rebase), member, state, score,
-- ...}, or {-1} when the member is not ranked. A windows board's state is
-- returned as text (wstate.lua).

--! include consts.lua
--! include wstate.lua

local A = {mode = ARGV[1], member = ARGV[2], offset = tonumber(ARGV[3]), n = tonumber(ARGV[4])}

local mode = A.mode
local card = redis.call('ZCARD', KEYS[1])
local lo, hi
if mode == READ_TOP then
  lo = A.offset; hi = lo + A.n - 1
else
  local r = redis.call('ZREVRANK', KEYS[1], A.member)
  if not r then return {-1} end
  if mode == READ_MEMBER then lo, hi = r, r else
    local n = A.n
    lo = r - n; if lo < 0 then lo = 0 end
    hi = r + n
  end
end
local base = ''
if KEYS[3] then base = redis.call('HGET', KEYS[3], 'k') or '' end
local reply = {card, lo, base}
if hi < lo then return reply end
local ms = redis.call('ZREVRANGE', KEYS[1], lo, hi, 'WITHSCORES')
if #ms == 0 then return reply end
local names = {}
for k = 1, #ms, 2 do names[#names+1] = ms[k] end
local sts = redis.call('HMGET', KEYS[2], unpack(names))
for k = 1, #names do
  reply[#reply+1] = names[k]; reply[#reply+1] = wshow(sts[k]); reply[#reply+1] = ms[2*k]
end
return reply
