-- members.lua (membersLua in members.go): reads the standing of several
-- members in several rankings of one hash slot atomically: each ranking's
-- rank of every member, the member's state and (decay boards) the base.
--
-- KEYS: per ranking, in order: its zset, its member state hash, and for a
--       decay board its base hash (the base is read in the same step as the
--       sums, as read.lua does)
-- ARGV: 1 the number of members m, 2..m+1 the members, then one number per
--       ranking: how many KEYS it takes (2, or 3 with a base hash)
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

--! include wstate.lua

local m = tonumber(ARGV[1])
local members = {}
for i = 1, m do members[i] = ARGV[i + 1] end
local states = {} -- state hash → its fields of the members, in order
local out = {}
local k = 1
for t = m + 2, #ARGV do
  local nk = tonumber(ARGV[t])
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
