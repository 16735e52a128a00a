-- expirew.lua (expireWindowsLua in scripts.go): the expiry of one windows
-- board, whose members keep their slices packed in their state
-- (packed.lua): subtracts from each window the slices that have left it,
-- records the last subtracted slice per window in the same step, drops
-- the slices no window needs any more, and deletes the id sets of those
-- slices. It reads only the members the expiry index P .. 'e' finds due.
--
-- KEYS: 1 P .. 'x', 2 P .. 'm', 3 P .. 'n', 4 P .. 'e', then each slice
--       set (slices.lua), then P .. 'z:<j>' per window, then the id set of
--       each slice given
-- ARGV (expireWindowsArgs in scriptargs.go), in order; the script reads
-- them into A under these names at its top, and nothing else reads ARGV:
--   prefix    P
--   tie       first-reached (1/0)
--   rb        the score's reached bits
--   res       the tie resolution, ms
--   maxTotal  the largest total ranked
--   origin    the epoch, ms
--   windows   "k" or "k:q1,…,qk" (slices.lua)
--   floor     the floor ('' = none)
--   neg       negative values allowed (1/0)
--   lengths   "slicems:n1,…,nk" (packed.lua)
--   cut       now − grace, ms
--   through   per window, as many as windows names (no count): the last
--             of its slices that has left it at now (Board.ExpiredThrough)
--   idSets    the number of id sets given, then their keys without the
--             prefix P (the id sets of the slices every window of their
--             set lets go: Store.expirePlan)
--
-- A member is due when its due time (packed.lua) is at or below now −
-- grace: then one of its slices has left a window. The index lists it
-- there. Each window j whose last subtracted slice moves from L0 to L1
-- takes from each due member's total the member's slices s of j's slice
-- set with L0 < s ≤ L1; the members not due hold no such slice. Only the
-- slice sets of the windows that move are decoded. Done twice, or by two callers at once, the
-- second finds the last subtracted slices moved and nothing due.
--
-- Every key it touches is declared (see applyKeys in store.go): it first
-- works out the id sets it deletes and answers {-1, 0, 0} without writing
-- when one was not given, and it deletes last (see expire.lua).
--
-- Reply: {(slice, window) subtractions, members removed from a window,
-- slices dropped}.
--
--! include consts.lua
--! include score.lua
--! include slices.lua
--! include wstate.lua
--! include packed.lua

-- decode reads ARGV (the layout above) into A.
local function decode()
  local A = {prefix = ARGV[1], tie = ARGV[2], rb = ARGV[3], res = ARGV[4], maxTotal = ARGV[5],
    origin = tonumber(ARGV[6]), windows = ARGV[7], floor = ARGV[8], neg = ARGV[9] == '1', lengths = ARGV[10],
    cut = tonumber(ARGV[11]), through = {}, idSets = {}}
  local nwin = windows(A.windows)
  for j = 1, nwin do A.through[j] = tonumber(ARGV[11+j]) end
  local at = 12 + nwin
  for k = 1, tonumber(ARGV[at]) do A.idSets[k] = ARGV[at+k] end
  return A
end
local A = decode()

local P = A.prefix
setlayout(A.tie, A.rb, A.res, A.maxTotal, A.floor)
local origin0, neg = A.origin, A.neg
local nwin, wq, gq = windows(A.windows)
local slicems, wn = wlengths(A.lengths)
local tcut = A.cut
local given = {}
for _, k in ipairs(A.idSets) do given[P .. k] = true end
local known = {}
for _, q in ipairs(gq) do known[q] = true end
local mk, ek = P .. 'm', P .. 'e'

-- Per window: its last subtracted slice before (L0) and after (L1).
local L0, L1, moved = {}, {}, {}
local idx = {}
for j = 1, nwin do idx[j] = j - 1 end
local xs = redis.call('HMGET', KEYS[1], unpack(idx))
local lmin = {} -- per slice set: the lowest last subtracted slice after
for j = 1, nwin do
  local T = A.through[j]
  if xs[j] then L0[j] = tonumber(xs[j]) end
  L1[j] = L0[j]
  if L0[j] == nil or T > L0[j] then L1[j] = T; moved[j] = true end
  if lmin[wq[j]] == nil or L1[j] < lmin[wq[j]] then lmin[wq[j]] = L1[j] end
end
-- Only the sets of the windows that move are decoded (wparse).
local need = {}
for j = 1, nwin do if moved[j] then need[wq[j]] = true end end
local drop = {}
for _, q in ipairs(gq) do
  drop[q] = redis.call('ZRANGEBYSCORE', sliceset(P, q), '-inf', fmt(lmin[q]))
  for _, sl in ipairs(drop[q]) do if not given[sliceset(P, q) .. ':' .. sl .. ':i'] then return {-1, 0, 0} end end
end

-- count(seen, a, s) counts pair (a, s) the first time it meets it: a
-- window and a slice subtracted from it, or a slice set and a slice
-- dropped (numbers, as table keys, cost no string per slice).
local subtracted, removed, dropped = 0, 0, 0
local seenSub, seenDrop = {}, {}
local function count(seen, a, s)
  local k = a * 4294967296 + s
  if not seen[k] then seen[k] = true; return 1 end
  return 0
end
-- The index's listings at or before now − grace: each member listed is
-- due, or listed there before its due time moved (passed over).
local fields, due, listed = {}, {}, {}
for _, f in ipairs(redis.call('HKEYS', ek)) do
  if tonumber(f) <= tcut then fields[#fields+1] = f end
end
for a = 1, #fields, 1000 do
  for _, l in ipairs(redis.call('HMGET', ek, unpack(fields, a, math.min(a + 999, #fields)))) do
    for member in string.gmatch(l or '', '%S+') do
      if not listed[member] then listed[member] = true; due[#due+1] = member end
    end
  end
end
for _, member in ipairs(due) do
  local raw = redis.call('HGET', mk, member)
  local st, sl, d0
  if raw then st, sl, d0 = wparse(raw, nwin, known, need) end
  if d0 ~= nil and d0 <= tcut then
    for j = 1, nwin do
      local set = sl[wq[j]]
      if moved[j] and set then
        local took = false
        for k = 1, #set.s do
          local s = set.s[k]
          if s > L1[j] then break end
          if L0[j] == nil or s > L0[j] then
            st[j+1] = st[j+1] - set.v[k]
            took = true
            subtracted = subtracted + count(seenSub, j, s)
          end
        end
        if took then
          if st[j+1] < 0 and not neg then st[j+1] = 0 end
          if st[j+1] == 0 then
            removed = removed + redis.call('ZREM', P .. 'z:' .. (j-1), member)
          else
            redis.call('ZADD', P .. 'z:' .. (j-1), score(st[j+1], st[1], origin0), member)
          end
        end
      end
    end
    for q, set in pairs(sl) do
      for k = 1, #(set.s or {}) do
        if set.s[k] <= lmin[q] then dropped = dropped + count(seenDrop, q, set.s[k]) end
      end
    end
    wprune(sl, lmin)
    local d = wdue(sl, nwin, wq, wn, slicems, L1)
    if d == nil then
      -- No window holds any of its slices: every total is 0.
      redis.call('HDEL', mk, member)
      for j = 1, nwin do removed = removed + redis.call('ZREM', P .. 'z:' .. (j-1), member) end
    else
      redis.call('HSET', mk, member, wformat(st, sl, nwin, d))
      windex(d, member)
    end
  end
end
for a = 1, #fields, 1000 do
  redis.call('HDEL', ek, unpack(fields, a, math.min(a + 999, #fields)))
end
wflush(ek)
for j = 1, nwin do
  if moved[j] then redis.call('HSET', KEYS[1], j-1, fmt(L1[j])) end
end
if sat > 0 then redis.call('HINCRBY', P .. 'n', FIELD_SATURATED, sat) end
for _, q in ipairs(gq) do
  local ss = sliceset(P, q)
  for _, sl in ipairs(drop[q]) do
    redis.call('DEL', ss .. ':' .. sl .. ':i')
    dropped = dropped + count(seenDrop, q, tonumber(sl))
  end
  if #drop[q] > 0 then redis.call('ZREMRANGEBYSCORE', ss, '-inf', fmt(lmin[q])) end
end
return {subtracted, removed, dropped}
