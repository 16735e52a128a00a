-- members.lua (membersLua in members.go): reads the standing of several
-- members in several rankings of one hash slot atomically: each ranking's
-- rank of every member, the member's state and (decay boards) the base.
--
-- KEYS: per ranking, in order: its zset, its member state hash, and for a
--       decay board its base hash (the base is read in the same step as the
--       sums, as read.lua does)
-- ARGV (membersArgs in scriptargs.go), in order; the script reads
-- them into A under these names at its top, and nothing else reads ARGV:
--   members   the number of members m, then the members
--   keyCounts per ranking, to the end (no count): how many KEYS it takes
--             (2, or 3 with a base hash)
--
-- Reply: one array per ranking, in order: {base ('' without a base hash or
-- before the first rebase), rank_1, state_1, score_1, ..., rank_m, state_m,
-- score_m}, where rank is 0-based or -1 when the member is not ranked,
-- state is the member's field of the state hash ('' when it has none: a
-- compact board keeps most states in the score alone; a windows board's
-- as text, wstate.lua) and score its score
-- ('' when not ranked).
--
-- The windows of a board share one state hash: each state hash is read
-- once, with one HMGET of every member.

--! include consts.lua
--! include wstate.lua

-- decode reads ARGV (the layout above) into A.
local function decode()
  local A = {members = {}, keyCounts = {}}
  local m = tonumber(ARGV[1])
  for i = 1, m do A.members[i] = ARGV[i + 1] end
  for t = m + 2, #ARGV do A.keyCounts[#A.keyCounts + 1] = tonumber(ARGV[t]) end
  return A
end
local A = decode()

local members = A.members
local m = #members
local states = {} -- state hash → its fields of the members, in order
local out = {}
local k = 1
for _, nk in ipairs(A.keyCounts) do
  local z, h = KEYS[k], KEYS[k + 1]
  local base = ''
  if nk == 3 then base = redis.call('HGET', KEYS[k + 2], 'k') or '' end
  k = k + nk
  local st = states[h]
  if not st then
    st = redis.call('HMGET', h, unpack(members))
    states[h] = st
  end
  local r = {base}
  for i = 1, m do
    local rank = redis.call('ZREVRANK', z, members[i])
    if rank then
      r[#r + 1] = rank
      r[#r + 1] = wshow(st[i])
      r[#r + 1] = redis.call('ZSCORE', z, members[i])
    else
      r[#r + 1] = -1
      r[#r + 1] = ''
      r[#r + 1] = ''
    end
  end
  out[#out + 1] = r
end
return out
