-- decay.lua: the base of a decay board (docs/DESIGN.md §8 "Total boards and
-- decay", board/decay.go), shared by apply.lua and rebase.lua (each includes
-- it after consts.lua and score.lua with "--! include decay.lua").
--
-- rebase(P, target) moves the base k of board P (hash P .. 'T:b', field
-- 'k'; t0 = epoch + k·half-life) to target when target is above it: every
-- member's sum S (P .. 'T:m': "S reached") becomes floor(S / 2^(target − k))
-- and its score follows (P .. 'T:z'); a member whose sum becomes 0 leaves
-- the board (it has decayed away); k and a count of rebases are recorded
-- in the same step. A board without a base takes target. Returns the base
-- in force and the number of members rewritten.
--
-- luacheck: read globals REPLY_REPLAN fmt score rparse rformat

-- baseMove reads the base k in hash bk. A board without a base takes
-- target (returns target, nil); a target not above k changes nothing
-- (returns k, nil); otherwise it returns k and the divisor 2^(target − k)
-- of every sum (past 2^64 every sum below 2^53 floors alike).
local function baseMove(bk, target)
  local k = tonumber(redis.call('HGET', bk, 'k') or '')
  if k == nil then
    redis.call('HSET', bk, 'k', fmt(target))
    return target, nil
  end
  if target <= k then return k, nil end
  return k, 2 ^ math.min(target - k, 64)
end

local function rebase(P, target)
  local bk = P .. 'T:b'
  local k, d = baseMove(bk, target)
  if not d then return k, 0 end
  local mk, zk = P .. 'T:m', P .. 'T:z'
  local all = redis.call('HGETALL', mk)
  local n = 0
  for j = 1, #all, 2 do
    local st = all[j+1]
    local sp = string.find(st, ' ', 1, true)
    local s = math.floor(tonumber(string.sub(st, 1, sp - 1)) / d)
    if s == 0 then
      redis.call('HDEL', mk, all[j])
      redis.call('ZREM', zk, all[j])
    else
      redis.call('HSET', mk, all[j], fmt(s) .. string.sub(st, sp))
      redis.call('ZADD', zk, score(s, 0, 0), all[j])
    end
    n = n + 1
  end
  redis.call('HSET', bk, 'k', fmt(target))
  redis.call('HINCRBY', bk, 'rebases', 1)
  return target, n
end

-- rebaseRolling(P, target, declared, origin) moves the base of rolling
-- decay board P (hash P .. 'b') to target when target is above it. Its
-- slices hold weighted sums in the base (P .. 's:<slice>': member → sum)
-- and each member's window sum (P .. 'm': "reached S") is the sum of its
-- slices still held; floor(ΣS) is not Σfloor(S), so the rebase divides
-- every slice's sums (floor; a sum that becomes 0 stays, so that the
-- expiry of its slice still meets the member) and sets each window sum to
-- the sum of the divided slices, rescoring P .. 'z:0' (a sum of 0 is not
-- ranked). The window sum then stays exactly what expire.lua subtracts.
-- Every slice must be declared (declared[key] true): when one is not, it
-- returns nil, REPLY_REPLAN before writing anything. Returns the base in force
-- and the slice sums and members rewritten.
local function rebaseRolling(P, target, declared, origin)
  local bk = P .. 'b'
  local k, d = baseMove(bk, target)
  if not d then return k, 0 end
  local sls = redis.call('ZRANGE', P .. 's', 0, -1)
  for _, sl in ipairs(sls) do
    if not declared[P .. 's:' .. sl] then return nil, REPLY_REPLAN end
  end
  local sums, n = {}, 0
  for _, sl in ipairs(sls) do
    local sk = P .. 's:' .. sl
    local h = redis.call('HGETALL', sk)
    local set = {}
    for j = 1, #h, 2 do
      local v = math.floor(tonumber(h[j+1]) / d)
      sums[h[j]] = (sums[h[j]] or 0) + v
      set[#set+1] = h[j]; set[#set+1] = fmt(v)
      n = n + 1
    end
    for a = 1, #set, 1000 do
      redis.call('HSET', sk, unpack(set, a, math.min(a + 999, #set)))
    end
  end
  local mk, zk = P .. 'm', P .. 'z:0'
  local all = redis.call('HGETALL', mk)
  for j = 1, #all, 2 do
    local st = rparse(all[j+1], 1)
    st[2] = sums[all[j]] or 0
    redis.call('HSET', mk, all[j], rformat(st, 1))
    if st[2] == 0 then
      redis.call('ZREM', zk, all[j])
    else
      redis.call('ZADD', zk, score(st[2], st[1], origin), all[j])
    end
    n = n + 1
  end
  redis.call('HSET', bk, 'k', fmt(target))
  redis.call('HINCRBY', bk, 'rebases', 1)
  return target, n
end
