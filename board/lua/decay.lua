-- decay.lua: the base of a decay board (docs/DESIGN.md §8 "Total boards and
-- decay", board/decay.go), shared by apply.lua and rebase.lua (each includes
-- it after score.lua with "--! include decay.lua").
--
-- rebase(P, target) moves the base k of board P (hash P .. 'T:b', field
-- 'k'; t0 = epoch + k·half-life) to target when target is above it: every
-- member's sum S (P .. 'T:m': "S reached") becomes floor(S / 2^(target − k))
-- and its score follows (P .. 'T:z'); a member whose sum becomes 0 leaves
-- the board (it has decayed away); k and a count of rebases are recorded
-- in the same step. A board without a base takes target. Returns the base
-- in force and the number of members rewritten.
--
-- luacheck: read globals fmt score

local function rebase(P, target)
  local bk = P .. 'T:b'
  local k = tonumber(redis.call('HGET', bk, 'k') or '')
  if k == nil then
    redis.call('HSET', bk, 'k', fmt(target))
    return target, 0
  end
  if target <= k then return k, 0 end
  local d = 2 ^ (target - k)
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
