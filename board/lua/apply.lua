-- apply.lua (applyLua in scripts.go): applies one board's share of a batch
-- atomically.
--
-- A periodic board's call is for one period: P is that period's prefix,
-- and its ranking, member states, ids, applied ranges, counters, settle
-- state, snapshot and deferred removals are P .. 'z', 'm', 'i', 'w', 'n',
-- 'st', 'S' and 'd' (keys.go).
--
-- KEYS: 1 the watermark hash P .. 'w'; every other key is built from the
--       prefix P and carries the same hash tag; every key the script may
--       touch is declared (see applyKeys in apply.go)
-- ARGV (applyArgs in scriptargs.go), in order; the script reads
-- them into A under these names at its top, and nothing else reads ARGV:
--   prefix    P
--   gen       the generation adopted ('' = unchecked)
--   kind      KIND_PERIOD, KIND_COMPACT (periodic, the score holds the
--             state), KIND_ROLLING, KIND_WINDOWS or KIND_TOTAL (consts.lua)
--   op        OP_INCR, OP_BEST or OP_SET
--   tie       first-reached (1/0)
--   rb        the score's reached bits
--   res       the tie resolution, ms
--   maxTotal  the largest total ranked (decay: the largest sum)
--   origin    rolling and total boards: the epoch, ms
--   windows   "k" or "k:q1,…,qk" (slices.lua)
--   check     CHECK_REMOVALS when the call removes from a rolling board's
--             slices, '' else
--   floor     the floor ('' = none)
--   halfLife  the half-life, ms ('' = no decay)
--   target    the decay base target
--   expire    periodic: the expire-at ms of the period's ranges and
--             counters ('' for other kinds)
--   lengths   a windows board's lengths ("slicems:n1,…,nk", packed.lua;
--             '' for other kinds)
--   parts     the number of parts, then per part: tp ("topic/partition"),
--             first and last offset, each (1/0: re-sent event by event),
--             removals: their number, then per removal member, settled
--             (1/0), offset and labels (their number, then each; periodic:
--             the periods it clears); buckets: their number, then per
--             bucket: bucket (period label, slice index, or a total
--             board's bucket: its half-life index with decay, else its UTC
--             day), origin ms (period start; a rolling decay board's
--             slice: its half-life index), expire ms (period keys; a total
--             board's id set) and entries: their number, then per entry
--             member, value, ts ms, id ('' = none) and offset
--
-- The part's hash field holds its applied ranges (ranges.lua). A part whose
-- first..last lies inside them is skipped; one that meets none is applied;
-- one that overlaps them in part is left alone and reported with the ranges
-- (board operations are not idempotent, and its entries may be folded
-- across offsets), and the caller re-sends it unfolded with each = 1: then
-- each entry whose offset is not in the ranges is applied. Whatever is
-- applied, first..last is merged into the ranges in the same step.
--
-- A part that follows a split part of the same partition is split too,
-- so that the re-send applies a partition's parts in offset order.
--
-- A removal (a remove event: removals come first in their part, before
-- the part's other entries) takes the member out of every window, of the
-- member hash and of every slice of every slice set; on a periodic board
-- out of the call's period when it lists it and, with settled, out of the
-- period's snapshot P .. 'S' (while settle.lua copies the period, both are
-- deferred into P .. 'd', as '<member>' and 'S <member>', and applied when
-- the copy ends); the caller sends it to each period it lists and each
-- settled period (registry.go). A rolling board's slices are read by the
-- caller to declare their keys: when the script finds one it was not given
-- it answers {REPLY_REPLAN} before writing anything.
--
-- Totals are sums kept exactly; the score ranks max(sum, floor) (score.lua).
-- On a KIND_COMPACT board (periodic, first-reached at 1 ms) the score holds
-- the total and the reached time: the member hash keeps only the members
-- whose score does not (a sum below the floor or beyond max total); a
-- member found there whose score can hold its state leaves it at its next
-- change.
-- On a rolling board a member whose window sum is 0 is not ranked there.
--
-- A total board keeps one ranking (P .. 'T:z', states P .. 'T:m') and its
-- event ids per bucket (P .. 'T:i:<bucket>'). With decay (decay.lua) it
-- first moves its base to the target (rebase), then adds each value (sent
-- already multiplied by its weight's mantissa) times 2^(bucket − base);
-- a sum is clamped at the max sum (counted as saturated).
--
-- A rolling or windows event goes into the slice of each window's slice
-- set (slices.lua) that holds it, and into each window that has not
-- subtracted that slice yet. An event with an id is counted in a slice set
-- only if it is new to its slice's id set there. A rolling board keeps
-- each slice in a hash (member → sum); a windows board keeps each
-- member's slices packed in its state (packed.lua), lists it in the
-- expiry index P .. 'e' at its due time, and lists in a slice set only
-- the slices that have an id set.
--
-- A rolling decay board (decay.lua rebaseRolling) first moves its base
-- (P .. 'b'), rewriting every slice, which must all be declared; then adds
-- each value times 2^(h − base) to its slice and its window sum (a decay
-- board has one window, so one slice set).
--
-- An event of a period that settlement froze (P .. 'st' field 'frozen', see
-- settle.lua), of a slice every window has subtracted, or of a half-life
-- below a decay board's base is late: not counted, and reported with its
-- part and bucket (a rolling decay board's below the base: with the part
-- index negated).
--
-- Reply: {REPLY_RESET} when the generation differs, {REPLY_REPLAN}
-- (nothing written) when a removal or a rebase meets an undeclared slice,
-- else {applied, skipped, duplicates, saturated, gaps closed, n splits,
-- (part index, ranges)..., n late, (part index, bucket)...}.
--
--! include consts.lua
--! include score.lua
--! include ranges.lua
--! include decay.lua
--! include slices.lua
--! include wstate.lua
--! include packed.lua

-- decode reads ARGV (the layout above) into A: A.parts[k] is part k
-- ({tp, first, last, each, removals, buckets}), each removal {member,
-- settled, offset, labels}, and each bucket {bucket, origin, expire, n}
-- with its n entries in columns: entry e is member[e], value[e], ts[e],
-- id[e] and offset[e] (columns, not a table per entry: a call may hold
-- thousands). The numbers the script computes with are numbers.
local function decode()
  local A = {prefix = ARGV[1], gen = ARGV[2], kind = ARGV[3], op = ARGV[4], tie = ARGV[5], rb = ARGV[6],
    res = ARGV[7], maxTotal = ARGV[8], origin = tonumber(ARGV[9]), windows = ARGV[10], check = ARGV[11],
    floor = ARGV[12], halfLife = tonumber(ARGV[13]), target = tonumber(ARGV[14]), expire = ARGV[15],
    lengths = ARGV[16], parts = {}}
  local i = 18
  for pi = 1, tonumber(ARGV[17]) do
    local part = {tp = ARGV[i], first = tonumber(ARGV[i+1]), last = tonumber(ARGV[i+2]), each = ARGV[i+3] == '1',
      removals = {}, buckets = {}}
    local nrm = tonumber(ARGV[i+4])
    i = i + 5
    for r = 1, nrm do
      local nl = tonumber(ARGV[i+3])
      local labels = {}
      for l = 1, nl do labels[l] = ARGV[i+3+l] end
      part.removals[r] = {member = ARGV[i], settled = ARGV[i+1] == '1', offset = tonumber(ARGV[i+2]), labels = labels}
      i = i + 4 + nl
    end
    local nb = tonumber(ARGV[i])
    i = i + 1
    for b = 1, nb do
      local bk = {bucket = ARGV[i], origin = tonumber(ARGV[i+1]), expire = ARGV[i+2], n = tonumber(ARGV[i+3]),
        member = {}, value = {}, ts = {}, id = {}, offset = {}}
      i = i + 4
      for e = 1, bk.n do
        bk.member[e], bk.value[e], bk.ts[e], bk.id[e], bk.offset[e] =
          ARGV[i], tonumber(ARGV[i+1]), tonumber(ARGV[i+2]), ARGV[i+3], tonumber(ARGV[i+4])
        i = i + 5
      end
      part.buckets[b] = bk
    end
    A.parts[pi] = part
  end
  return A
end
local A = decode()

local P = A.prefix
if A.gen ~= '' and redis.call('HGET', KEYS[1], FIELD_GEN) ~= A.gen then return {REPLY_RESET} end
local periodic, istotal, op = A.kind == KIND_PERIOD or A.kind == KIND_COMPACT, A.kind == KIND_TOTAL, A.op
local compact = A.kind == KIND_COMPACT
local packed = A.kind == KIND_WINDOWS -- a windows board (packed.lua)
setlayout(A.tie, A.rb, A.res, A.maxTotal, A.floor)
local origin0 = A.origin
local nwin, wq, gq = windows(A.windows)
local halfLife, base = A.halfLife, nil
if istotal and halfLife then base = rebase(P, A.target) end
local rdecay = halfLife ~= nil and not istotal and not periodic
local slicems, wn = nil, nil
if packed then slicems, wn = wlengths(A.lengths) end
local known = {}
for _, q in ipairs(gq) do known[q] = true end

local declared = nil
if A.check ~= '' or rdecay then
  declared = {}
  for _, k in ipairs(KEYS) do declared[k] = true end
end
-- Removals: every slice they touch must be declared.
if A.check == CHECK_REMOVALS then
  for _, q in ipairs(gq) do
    local set = sliceset(P, q)
    for _, x in ipairs(redis.call('ZRANGE', set, 0, -1)) do
      if not declared[set .. ':' .. x] then return {REPLY_REPLAN} end
    end
  end
end
-- A rolling decay board moves its base first, rewriting every slice
-- (decay.lua): they must be declared too.
if rdecay then
  base = rebaseRolling(P, A.target, declared, origin0)
  if base == nil then return {REPLY_REPLAN} end
end

local function snapRemove(key, member)
  local tail = ' ' .. member
  for _, e in ipairs(redis.call('LRANGE', key, 0, -1)) do
    if string.sub(e, -#tail) == tail then
      redis.call('LREM', key, 1, e)
      return
    end
  end
end

local removed = 0
local function removeMember(member, settled, labels)
  removed = removed + 1
  if istotal then
    redis.call('ZREM', P .. 'T:z', member)
    redis.call('HDEL', P .. 'T:m', member)
    return
  end
  if periodic then -- labels lists at most this call's period
    local busy = redis.call('HGET', P .. 'st', 'busy')
    if #labels > 0 then
      if busy then
        redis.call('SADD', P .. 'd', member)
      else
        redis.call('ZREM', P .. 'z', member)
        redis.call('HDEL', P .. 'm', member)
      end
    end
    if settled then -- this period's snapshot, or its copy when it is copied
      if busy then redis.call('SADD', P .. 'd', 'S ' .. member) else snapRemove(P .. 'S', member) end
    end
    return
  end
  for j = 1, nwin do redis.call('ZREM', P .. 'z:' .. (j-1), member) end
  redis.call('HDEL', P .. 'm', member)
  if packed then return end -- its slices go with its state; its index listing is passed over
  for _, q in ipairs(gq) do
    local set = sliceset(P, q)
    for _, sl in ipairs(redis.call('ZRANGE', set, 0, -1)) do
      redis.call('HDEL', set .. ':' .. sl, member)
    end
  end
end
local applied, skipped, dup, late, closed = 0, 0, 0, 0, 0
-- covered(o) is true when the entry at offset o is to be left alone: in a
-- part re-sent entry by entry, an entry whose offset is already applied.
local R0 = nil
local function covered(o)
  return R0 ~= nil and rcover(R0, o, o) == 'all'
end
local splits, lates = {}, {}
-- splitTP[tp]: a part of the partition was split, so its later parts (cut
-- by a removal) wait for the re-send too, in order.
local splitTP = {}
local L = {}
if not periodic and not istotal then
  local x = redis.call('HMGET', P .. 'x', unpack((function() local t = {} for j = 0, nwin-1 do t[#t+1] = j end return t end)()))
  for j = 1, nwin do if x[j] then L[j] = tonumber(x[j]) end end
end

-- frozen: the newest period settlement froze (settle.lua); an event of a
-- period at or below it (labels sort in time order) is late.
local frozen = nil
if periodic then frozen = redis.call('HGET', P .. 'st', FIELD_FROZEN) end

-- lateBucket reports the entries of bucket bk found late (a rolling decay
-- board's slice below the base: with -pi).
local function lateBucket(pi, bk)
  local n = 0
  for e = 1, bk.n do if not covered(bk.offset[e]) then n = n + 1 end end
  if n > 0 then
    lates[#lates+1] = pi; lates[#lates+1] = bk.bucket
    late = late + n
  end
end

-- addEntries counts bucket bk's entries into ranking zk, states mk and id
-- set ik, with first-reached origin org; each value times mult (decay).
local function addEntries(zk, mk, ik, org, bk, mult)
  for e = 1, bk.n do
    local member, v, ts, id = bk.member[e], bk.value[e] * mult, bk.ts[e], bk.id[e]
    if covered(bk.offset[e]) then -- luacheck: ignore 542
      -- applied before
    elseif id ~= '' and redis.call('SADD', ik, id) == 0 then
      dup = dup + 1
    else
      applied = applied + 1
      local st = redis.call('HGET', mk, member)
      local total, reached
      if st then
        local sp = string.find(st, ' ', 1, true)
        total, reached = tonumber(string.sub(st, 1, sp - 1)), tonumber(string.sub(st, sp + 1))
      elseif compact then
        local sc = redis.call('ZSCORE', zk, member)
        if sc then total, reached = unscore(tonumber(sc), org) end
      end
      local changed = true
      if not total then
        total, reached = v, ts
      elseif op == OP_INCR then
        total = total + v
        if ts > reached then reached = ts end
      elseif op == OP_BEST then
        if v > total or (v == total and ts < reached) then total, reached = v, ts else changed = false end
      else
        if ts > reached or (ts == reached and v > total) then total, reached = v, ts else changed = false end
      end
      if halfLife then -- decay: keep the sum within the exact range
        total = clampsum(total)
      end
      if changed then
        if not compact or not exact(total) then
          redis.call('HSET', mk, member, fmt(total) .. ' ' .. fmt(reached))
        elseif st then
          redis.call('HDEL', mk, member)
        end
        redis.call('ZADD', zk, score(total, reached, org), member)
      end
    end
  end
end

local function periodicBucket(pi, bk)
  if frozen and bk.bucket <= frozen then
    lateBucket(pi, bk)
    return
  end
  local zk, mk, ik = P .. 'z', P .. 'm', P .. 'i'
  addEntries(zk, mk, ik, bk.origin, bk, 1)
  redis.call('PEXPIREAT', zk, bk.expire)
  redis.call('PEXPIREAT', mk, bk.expire)
  redis.call('PEXPIREAT', ik, bk.expire)
end

local function totalBucket(pi, bk)
  local mult = 1
  if halfLife then
    local h = tonumber(bk.bucket)
    if h < base then
      lateBucket(pi, bk)
      return
    end
    mult = 2 ^ (h - base)
  end
  local ik = P .. 'T:i:' .. bk.bucket
  addEntries(P .. 'T:z', P .. 'T:m', ik, bk.origin, bk, mult)
  redis.call('PEXPIREAT', ik, bk.expire)
end

-- rollingBucket counts a board slice's entries: into the slice of each
-- slice set some window still takes it from (gs: per window, its slice)
-- and into those windows.
--
-- A rolling decay board (rdecay) adds each value (sent multiplied by its
-- weight's mantissa) times 2^(h − base), h the slice's half-life (sent as
-- its origin); a slice below the base is late. An entry that would take
-- its slice's sum or its window sum beyond ±(2^53 − 1) is not added
-- (counted as saturated): the sums stay exact, and the window sum the sum
-- of the slices.
local rsat = 0
-- windowsAdd counts an event of value v at ts for member, whose state st
-- ({reached_at, total of window 1, …}) it updates: v goes into each window j
-- that takes the event's slice (take[j], and its slice set counts the entry:
-- new[wq[j]]), and each window's ranking follows the member's total there
-- (a total of 0 is not ranked). Shared by the rolling and the windows
-- (packed) paths.
local function windowsAdd(st, member, v, ts, take, new)
  applied = applied + 1
  local moved = ts > st[1]
  if moved then st[1] = ts end
  for j = 1, nwin do
    local tj = take[j] and new[wq[j]] ~= nil
    if tj then st[j+1] = st[j+1] + v end
    if st[j+1] == 0 then
      if tj then redis.call('ZREM', P .. 'z:' .. (j-1), member) end
    elseif tj or moved then
      redis.call('ZADD', P .. 'z:' .. (j-1), score(st[j+1], st[1], origin0), member)
    end
  end
end

local function rollingBucket(pi, bk)
  local s, h = tonumber(bk.bucket), bk.origin
  local take, any, gs = {}, false, {}
  for j = 1, nwin do
    gs[j] = math.floor(s / wq[j])
    if L[j] == nil or gs[j] > L[j] then take[j] = true; any = true end
  end
  if not any then
    lateBucket(pi, bk)
    return
  end
  local mult = 1
  if rdecay then
    if h < base then
      lateBucket(-pi, bk)
      return
    end
    mult = 2 ^ (h - base)
  end
  local gkey = {} -- per slice set some window takes the slice from: the slice's key
  for j = 1, nwin do
    if take[j] and not gkey[wq[j]] then
      local set = sliceset(P, wq[j])
      gkey[wq[j]] = set .. ':' .. fmt(gs[j])
      redis.call('ZADD', set, gs[j], fmt(gs[j]))
    end
  end
  local mk = P .. 'm'
  for e = 1, bk.n do
    local member, v, ts, id = bk.member[e], bk.value[e] * mult, bk.ts[e], bk.id[e]
    local new = gkey -- the slice sets that count the entry
    if covered(bk.offset[e]) then
      new = nil -- applied before
    elseif id ~= '' then
      new = nil
      for _, q in ipairs(gq) do
        if gkey[q] and redis.call('SADD', gkey[q] .. ':i', id) == 1 then
          new = new or {}
          new[q] = gkey[q]
        end
      end
      if not new then dup = dup + 1 end
    end
    local st = nil
    if new and rdecay then -- one window: one slice set
      local sk = new[wq[1]]
      st = rparse(redis.call('HGET', mk, member), nwin)
      local cell = tonumber(redis.call('HGET', sk, member) or '0') + v
      if math.abs(cell) > MAX_SUM or math.abs(st[2] + v) > MAX_SUM then
        rsat = rsat + 1
        st = nil
      else
        redis.call('HSET', sk, member, fmt(cell))
      end
    elseif new then
      for _, q in ipairs(gq) do
        if new[q] then redis.call('HINCRBY', new[q], member, v) end
      end
      st = rparse(redis.call('HGET', mk, member), nwin)
    end
    if st then
      windowsAdd(st, member, v, ts, take, new)
      redis.call('HSET', mk, member, rformat(st, nwin))
    end
  end
end

-- windowsBucket counts a board slice's entries on a windows board: into
-- each member's packed slice (packed.lua) of each slice set some window
-- still takes it from, and into those windows; a member whose due time
-- moves (its first event, or an event for an older slice) is listed in
-- the expiry index at the new one (written once, after the parts). An entry that would take a slice's sum or a window sum
-- beyond ±(2^53 − 1) is not added (counted as saturated), so that every
-- sum stays exact and each window sum the sum of its slices.
local function windowsBucket(pi, bk)
  local s = tonumber(bk.bucket)
  local take, any, gs = {}, false, {}
  local sq = {} -- per slice set some window takes the slice from: its index there
  for j = 1, nwin do
    gs[j] = math.floor(s / wq[j])
    if L[j] == nil or gs[j] > L[j] then
      take[j] = true; any = true
      sq[wq[j]] = gs[j]
    end
  end
  if not any then
    lateBucket(pi, bk)
    return
  end
  local mk = P .. 'm'
  local listed = false
  for e = 1, bk.n do
    local member, v, ts, id = bk.member[e], bk.value[e], bk.ts[e], bk.id[e]
    local new = sq -- the slice sets that count the entry
    if covered(bk.offset[e]) then
      new = nil -- applied before
    elseif id ~= '' then
      if not listed then -- the slice sets list the slices with an id set
        for _, q in ipairs(gq) do
          if sq[q] then redis.call('ZADD', sliceset(P, q), sq[q], fmt(sq[q])) end
        end
        listed = true
      end
      new = nil
      for _, q in ipairs(gq) do
        if sq[q] and redis.call('SADD', sliceset(P, q) .. ':' .. fmt(sq[q]) .. ':i', id) == 1 then
          new = new or {}
          new[q] = sq[q]
        end
      end
      if not new then dup = dup + 1 end
    end
    if new then
      local raw = redis.call('HGET', mk, member)
      -- The common case: the slice is the newest of each set or newer
      -- (wquick); else, and for a new member, the slices are decoded.
      local st, d0, segs, cells, sl = nil, nil, nil, nil, nil
      if raw then st, d0, segs, cells = wquick(raw, new, v, nwin) end
      if not st then
        st, sl, d0 = wparse(raw, nwin, known)
        cells = {}
        for q, x in pairs(new) do cells[q] = wcell(sl, q, x) + v end
      end
      local ok = true
      for _, c in pairs(cells) do
        if math.abs(c) > MAX_SUM then ok = false end
      end
      for j = 1, nwin do
        if take[j] and new[wq[j]] and math.abs(st[j+1] + v) > MAX_SUM then ok = false end
      end
      if not ok then
        rsat = rsat + 1
      else
        windowsAdd(st, member, v, ts, take, new)
        local d1
        if segs then
          -- The slice added is the first above each taking window's last
          -- subtracted one only if the member had none there: the due
          -- time can only come earlier.
          d1 = d0
          for j = 1, nwin do
            if take[j] and new[wq[j]] then d1 = math.min(d1, (gs[j] + wn[j]) * slicems * wq[j]) end
          end
          redis.call('HSET', mk, member, whead(st, nwin) .. venc(zz(d1)) .. segs)
        else
          for q, x in pairs(new) do wadd(sl, q, x, v) end
          d1 = wdue(sl, nwin, wq, wn, slicems, L)
          redis.call('HSET', mk, member, wformat(st, sl, nwin, d1))
        end
        if d1 ~= d0 then windex(d1, member) end
      end
    end
  end
end

for pi, part in ipairs(A.parts) do
  local tp, first, last = part.tp, part.first, part.last
  local ranges = rparse_ranges(redis.call('HGET', KEYS[1], tp))
  local mode = 'apply'
  R0 = nil
  if part.each then
    R0 = ranges
  else
    local c = rcover(ranges, first, last)
    if splitTP[tp] then c = 'some' end
    if c == 'all' then
      mode = 'skip'; skipped = skipped + 1
    elseif c == 'some' then
      mode = 'split'; splits[#splits+1] = pi; splits[#splits+1] = rformat_ranges(ranges)
      splitTP[tp] = true
    end
  end
  if mode == 'apply' then
    for _, rm in ipairs(part.removals) do
      if R0 == nil or rcover(R0, rm.offset, rm.offset) ~= 'all' then removeMember(rm.member, rm.settled, rm.labels) end
    end
    for _, bk in ipairs(part.buckets) do
      if periodic then
        periodicBucket(pi, bk)
      elseif istotal then
        totalBucket(pi, bk)
      elseif packed then
        windowsBucket(pi, bk)
      else
        rollingBucket(pi, bk)
      end
    end
  end
  if mode == 'apply' then
    local n, c = radd(ranges, first, last)
    closed = closed + c
    redis.call('HSET', KEYS[1], tp, rformat_ranges(n))
  end
end
if packed then wflush(P .. 'e') end
if late > 0 then redis.call('HINCRBY', P .. 'n', FIELD_LATE, late) end
local saturated = sat + rsat
if saturated > 0 then redis.call('HINCRBY', P .. 'n', FIELD_SATURATED, saturated) end
if closed > 0 then redis.call('HINCRBY', P .. 'n', 'gaps_closed', closed) end
if periodic then
  redis.call('PEXPIREAT', KEYS[1], A.expire)
  redis.call('PEXPIREAT', P .. 'n', A.expire)
end
local reply = {applied + removed, skipped, dup, saturated, closed, #splits / 2}
for _, v in ipairs(splits) do reply[#reply+1] = v end
reply[#reply+1] = #lates / 2
for _, v in ipairs(lates) do reply[#reply+1] = v end
return reply
