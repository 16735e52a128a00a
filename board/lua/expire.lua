-- expire.lua (expireLua in scripts.go): subtracts the slices that have left
-- each window of one rolling or windows board, records the last subtracted
-- slice per window in the same step, removes members whose total reaches 0,
-- and deletes the slices no window needs any more.
--
-- KEYS: 1 the board's last-subtracted hash (P .. 'x'), 2 P .. 'm',
--       3 P .. 'n', then each slice set (slices.lua), then P .. 'z:<j>'
--       per window, then each slice given and its ids' set
-- ARGV (expireArgs in scriptargs.go), in order; the script reads
-- them into A under these names at its top, and nothing else reads ARGV:
--   prefix    P
--   tie       first-reached (1/0)
--   rb        the score's reached bits
--   res       the tie resolution, ms
--   maxTotal  the largest total ranked
--   origin    the epoch, ms
--   windows   "k" or "k:q1,…,qk" (slices.lua)
--   floor     the floor ('' = none)
--   neg       1: a member whose window sums are all 0 keeps its state
--             while a window holds the slice of its newest event
--             (negative values allowed, or decay); else 0
--   slice     the board's slice, ms
--   through   per window, as many as windows names (no count): the last
--             of its slices that has left it at now
--   slices    the number of slices given, then their keys without the
--             prefix P (Store.expirePlan)
--
-- Each window subtracts the slices of its own slice set; a slice set
-- deletes the slices that every window keeping it has subtracted.
--
-- Every key it touches is declared (see applyKeys in store.go), so it first
-- works out which slices it needs and answers {-1, 0, 0} without writing
-- when one was not given. It then writes each key only after its last read,
-- and deletes last: in a slot that is being migrated, Redis fails a command
-- on a key that does not exist (here: one the script emptied), and a script
-- that fails half-way keeps its earlier writes.
--
-- Reply: {subtractions, members removed, slices deleted}.
--
--! include consts.lua
--! include score.lua
--! include slices.lua

-- decode reads ARGV (the layout above) into A.
local function decode()
  local A = {prefix = ARGV[1], tie = ARGV[2], rb = ARGV[3], res = ARGV[4], maxTotal = ARGV[5],
    origin = tonumber(ARGV[6]), windows = ARGV[7], floor = ARGV[8], neg = ARGV[9] == '1',
    slice = tonumber(ARGV[10]), through = {}, slices = {}}
  local nwin = windows(A.windows)
  for j = 1, nwin do A.through[j] = tonumber(ARGV[10+j]) end
  local at = 11 + nwin
  for k = 1, tonumber(ARGV[at]) do A.slices[k] = ARGV[at+k] end
  return A
end
local A = decode()

local P = A.prefix
setlayout(A.tie, A.rb, A.res, A.maxTotal, A.floor)
local origin0, neg, slicems = A.origin, A.neg, A.slice
local nwin, wq, gq = windows(A.windows)
local given = {}
for _, k in ipairs(A.slices) do given[P .. k] = true end
local mk = P .. 'm'

-- The plan: the slices each window subtracts, and those no window of
-- their slice set needs.
local plan, T, Lw = {}, {}, {}
local lmin = {} -- per slice set: the lowest last subtracted slice
for j = 1, nwin do
  T[j] = A.through[j]
  local Lr, L = redis.call('HGET', KEYS[1], j-1), nil
  if Lr then L = tonumber(Lr) end
  if L == nil or T[j] > L then
    local lo = '-inf'
    if L then lo = '(' .. fmt(L) end
    plan[j] = redis.call('ZRANGEBYSCORE', sliceset(P, wq[j]), lo, fmt(T[j]))
    L = T[j]
  end
  if lmin[wq[j]] == nil or L < lmin[wq[j]] then lmin[wq[j]] = L end
  Lw[j] = L
end
local drop = {}
for _, q in ipairs(gq) do
  drop[q] = redis.call('ZRANGEBYSCORE', sliceset(P, q), '-inf', fmt(lmin[q]))
  for _, sl in ipairs(drop[q]) do if not given[sliceset(P, q) .. ':' .. sl] then return {-1, 0, 0} end end
end
for j, sls in pairs(plan) do
  for _, sl in ipairs(sls) do if not given[sliceset(P, wq[j]) .. ':' .. sl] then return {-1, 0, 0} end end
end

-- Member states are read once and written back at the end.
local states = {}
local function state(member)
  local st = states[member]
  if st == nil then
    local raw = redis.call('HGET', mk, member)
    st = false
    if raw then st = rparse(raw, nwin) end
    states[member] = st
  end
  return st
end
local function chunked(cmd, key, list, n)
  local done = 0
  for a = 1, #list, n do
    done = done + redis.call(cmd, key, unpack(list, a, math.min(a + n - 1, #list)))
  end
  return done
end

local subtracted, removed, deleted = 0, 0, 0
for j = 1, nwin do
  if plan[j] then
    local ranked = {} -- member → still ranked in window j
    for _, sl in ipairs(plan[j]) do
      local h = redis.call('HGETALL', sliceset(P, wq[j]) .. ':' .. sl)
      for k = 1, #h, 2 do
        local st = state(h[k])
        if st then
          st[j+1] = st[j+1] - tonumber(h[k+1])
          if st[j+1] < 0 and not neg then st[j+1] = 0 end
          ranked[h[k]] = st[j+1] ~= 0
        end
      end
      subtracted = subtracted + 1
    end
    local zk = P .. 'z:' .. (j-1)
    local add, rem = {}, {}
    for member, live in pairs(ranked) do
      if live then
        local st = states[member]
        add[#add+1] = score(st[j+1], st[1], origin0); add[#add+1] = member
      else
        rem[#rem+1] = member
      end
    end
    if #add > 0 then chunked('ZADD', zk, add, 1000) end
    if #rem > 0 then removed = removed + chunked('ZREM', zk, rem, 1000) end
    redis.call('HSET', KEYS[1], j-1, fmt(T[j]))
  end
end
local set, del = {}, {}
for member, st in pairs(states) do
  if st then
    local any = false
    for jj = 2, nwin + 1 do if st[jj] ~= 0 then any = true end end
    -- With negative values a window sum of 0 may still hold slices (+5
    -- and -5): the state stays while a window still holds the slice of
    -- the newest event the member counted.
    if neg and not any then
      for j = 1, nwin do
        if math.floor(st[1] / (slicems * wq[j])) > Lw[j] then any = true end
      end
    end
    if any then set[#set+1] = member; set[#set+1] = rformat(st, nwin) else del[#del+1] = member end
  end
end
if #set > 0 then chunked('HSET', mk, set, 1000) end
if #del > 0 then chunked('HDEL', mk, del, 1000) end
if sat > 0 then redis.call('HINCRBY', P .. 'n', FIELD_SATURATED, sat) end
for _, q in ipairs(gq) do
  local ss = sliceset(P, q)
  for _, sl in ipairs(drop[q]) do
    redis.call('DEL', ss .. ':' .. sl, ss .. ':' .. sl .. ':i')
    deleted = deleted + 1
  end
  if #drop[q] > 0 then redis.call('ZREMRANGEBYSCORE', ss, '-inf', fmt(lmin[q])) end
end
return {subtracted, removed, deleted}
