package board

import "github.com/redis/go-redis/v9"

// luaCommon defines the score of a member, shared by the scripts.
//
//	score = min(total, maxt)·2^rb + (2^rb − 1 − floor((reached − origin)/res))   (tie: first-reached)
//	score = min(total, maxt)                                                     (tie: none)
//
// Every value is an integer below 2^53, exact in Lua's doubles; string.format
// with %.0f writes it exactly (tostring would round to 14 digits).
const luaCommon = `
local function fmt(x) return string.format('%.0f', x) end
local tie, rb, res, maxt = false, 0, 1, 0
local R = 1
local sat = 0
local function setlayout(t, b, r, m)
  tie = t == '1'; rb = tonumber(b); res = tonumber(r); maxt = tonumber(m); R = 2^rb
end
local function score(total, reached, origin)
  local t = total
  if t > maxt then t = maxt; sat = sat + 1 end
  if not tie then return fmt(t) end
  local rel = math.floor((reached - origin) / res)
  if rel < 0 then rel = 0 elseif rel > R - 1 then rel = R - 1 end
  return fmt(t * R + (R - 1 - rel))
end
-- rolling member state: "reached t1 … tk"
local function rparse(s, nwin)
  local v = {}
  if s then for w in string.gmatch(s, '%S+') do v[#v+1] = tonumber(w) end end
  if #v == 0 then v[1] = 0 end
  for j = #v, nwin do v[j+1] = v[j+1] or 0 end
  return v
end
local function rformat(v, nwin)
  local out = {}
  for j = 1, nwin + 1 do out[j] = fmt(v[j]) end
  return table.concat(out, ' ')
end
`

// maxRanges bounds the applied ranges kept per board and topic-partition
// (MAXR in luaRanges).
const maxRanges = 64

// luaRanges keeps the applied offset ranges of one topic-partition: a
// sorted list of disjoint, non-adjacent {lo, hi}, stored as "lo-hi,lo-hi".
// A bare number N is the format of earlier versions, a watermark: every
// offset up to N applied, {0, N} (offsets are never negative).
//
// radd merges [a, b] in and returns the new list and the number of gaps it
// closed to keep at most maxRanges ranges: the narrowest gap (the lowest of
// equal ones) is marked applied. A gap between ranges is offsets no applier
// has marked yet: a range still to be replayed from another write-ahead
// log, or offsets that hold no record (transaction markers, compacted
// records) between two batches. Closing it is the old watermark semantics:
// its records, if any, are never applied afterwards (never applied twice).
const luaRanges = `
local MAXR = 64
local function rparse_ranges(s)
  local r = {}
  if not s then return r end
  if not string.find(s, '-', 1, true) then
    local n = tonumber(s)
    if n and n >= 0 then r[1] = {0, n} end
    return r
  end
  for lo, hi in string.gmatch(s, '(%d+)%-(%d+)') do r[#r+1] = {tonumber(lo), tonumber(hi)} end
  return r
end
local function rformat_ranges(r)
  local out = {}
  for k, v in ipairs(r) do out[k] = string.format('%.0f-%.0f', v[1], v[2]) end
  return table.concat(out, ',')
end
-- 'all' when [a, b] lies in one range, 'none' when it meets none, else
-- 'some' (ranges are disjoint and non-adjacent, so a covered [a, b] lies in
-- one).
local function rcover(r, a, b)
  for _, v in ipairs(r) do
    if v[1] <= a and b <= v[2] then return 'all' end
    if v[1] <= b and a <= v[2] then return 'some' end
    if v[1] > b then break end
  end
  return 'none'
end
local function radd(r, a, b)
  local out, placed = {}, false
  for _, v in ipairs(r) do
    if v[2] + 1 < a then
      out[#out+1] = v
    elseif b + 1 < v[1] then
      if not placed then out[#out+1] = {a, b}; placed = true end
      out[#out+1] = v
    else
      if v[1] < a then a = v[1] end
      if v[2] > b then b = v[2] end
    end
  end
  if not placed then out[#out+1] = {a, b} end
  local closed = 0
  while #out > MAXR do
    local at, w = 1, nil
    for k = 1, #out - 1 do
      local g = out[k+1][1] - out[k][2]
      if w == nil or g < w then at, w = k, g end
    end
    out[at][2] = out[at+1][2]
    table.remove(out, at + 1)
    closed = closed + 1
  end
  return out, closed
end
`

// applyLua applies one board's share of a batch atomically.
//
//	KEYS: 1 the board's watermark hash (P .. 'w'); every other key is built
//	      from the prefix P and carries the same hash tag
//	ARGV: 1 P, 2 generation ('' = unchecked), 3 kind ('p' periodic, 'r'),
//	      4 op, 5 tie (1/0), 6 rb, 7 res ms, 8 max total, 9 origin (rolling
//	      epoch ms), 10 windows, 11 parts, then per part:
//	      "topic/partition", first offset, last offset, each (1/0),
//	      buckets, then per bucket: bucket (period label or slice index),
//	      origin ms (period start), expire-at ms (period keys), entries,
//	      then per entry: member, value, ts ms, id ('' = none), offset
//
// The part's hash field holds its applied ranges (luaRanges). A part whose
// first..last lies inside them is skipped; one that meets none is applied;
// one that overlaps them in part is left alone and reported with the ranges
// (board operations are not idempotent, and its entries may be folded
// across offsets), and the caller re-sends it unfolded with each = 1: then
// each entry whose offset is not in the ranges is applied. Whatever is
// applied, first..last is merged into the ranges in the same step.
//
// Reply: {'reset'} when the generation differs, else {applied, skipped,
// duplicates, saturated, gaps closed, n splits, (part index, ranges)…,
// n late, (part index, bucket)…}.
const applyLua = luaCommon + luaRanges + `
local P = ARGV[1]
if ARGV[2] ~= '' and redis.call('HGET', KEYS[1], 'gen') ~= ARGV[2] then return {'reset'} end
local periodic, op = ARGV[3] == 'p', ARGV[4]
setlayout(ARGV[5], ARGV[6], ARGV[7], ARGV[8])
local origin0, nwin, nparts = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local i = 12
local applied, skipped, dup, late, closed = 0, 0, 0, 0, 0
-- covered(k) is true when the entry at ARGV[k] is to be left alone: in a
-- part re-sent entry by entry, an entry whose offset is already applied.
local R0 = nil
local function covered(k)
  return R0 ~= nil and rcover(R0, tonumber(ARGV[k+4]), tonumber(ARGV[k+4])) == 'all'
end
local splits, lates = {}, {}
local L = {}
if not periodic then
  local x = redis.call('HMGET', P .. 'x', unpack((function() local t = {} for j = 0, nwin-1 do t[#t+1] = j end return t end)()))
  for j = 1, nwin do if x[j] then L[j] = tonumber(x[j]) end end
end

local function periodicBucket(bucket, org, exp, ne)
  local base = P .. 'p:' .. bucket .. ':'
  local zk, mk, ik = base .. 'z', base .. 'm', base .. 'i'
  for e = 0, ne - 1 do
    local k = i + 5 * e
    local member, v, ts, id = ARGV[k], tonumber(ARGV[k+1]), tonumber(ARGV[k+2]), ARGV[k+3]
    if covered(k) then
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
      end
      local changed = true
      if not total then
        total, reached = v, ts
      elseif op == 'incr' then
        total = total + v
        if ts > reached then reached = ts end
      elseif op == 'best' then
        if v > total or (v == total and ts < reached) then total, reached = v, ts else changed = false end
      else
        if ts > reached or (ts == reached and v > total) then total, reached = v, ts else changed = false end
      end
      if changed then
        redis.call('HSET', mk, member, fmt(total) .. ' ' .. fmt(reached))
        redis.call('ZADD', zk, score(total, reached, org), member)
      end
    end
  end
  redis.call('PEXPIREAT', zk, exp)
  redis.call('PEXPIREAT', mk, exp)
  redis.call('PEXPIREAT', ik, exp)
end

local function rollingBucket(pi, bucket, ne)
  local s = tonumber(bucket)
  local take, any = {}, false
  for j = 1, nwin do
    if L[j] == nil or s > L[j] then take[j] = true; any = true end
  end
  if not any then
    local n = 0
    for e = 0, ne - 1 do if not covered(i + 5 * e) then n = n + 1 end end
    if n > 0 then
      lates[#lates+1] = pi; lates[#lates+1] = bucket
      late = late + n
    end
    return
  end
  local sk, mk = P .. 's:' .. bucket, P .. 'm'
  redis.call('ZADD', P .. 's', s, bucket)
  for e = 0, ne - 1 do
    local k = i + 5 * e
    local member, v, ts, id = ARGV[k], tonumber(ARGV[k+1]), tonumber(ARGV[k+2]), ARGV[k+3]
    if covered(k) then
      -- applied before
    elseif id ~= '' and redis.call('SADD', sk .. ':i', id) == 0 then
      dup = dup + 1
    else
      applied = applied + 1
      redis.call('HINCRBY', sk, member, v)
      local st = rparse(redis.call('HGET', mk, member), nwin)
      local moved = ts > st[1]
      if moved then st[1] = ts end
      for j = 1, nwin do
        if take[j] then st[j+1] = st[j+1] + v end
        if take[j] or (moved and st[j+1] > 0) then
          redis.call('ZADD', P .. 'z:' .. (j-1), score(st[j+1], st[1], origin0), member)
        end
      end
      redis.call('HSET', mk, member, rformat(st, nwin))
    end
  end
end

for pi = 1, nparts do
  local tp, first, last, each, nb = ARGV[i], tonumber(ARGV[i+1]), tonumber(ARGV[i+2]), ARGV[i+3] == '1', tonumber(ARGV[i+4])
  i = i + 5
  local ranges = rparse_ranges(redis.call('HGET', KEYS[1], tp))
  local mode = 'apply'
  R0 = nil
  if each then
    R0 = ranges
  else
    local c = rcover(ranges, first, last)
    if c == 'all' then
      mode = 'skip'; skipped = skipped + 1
    elseif c == 'some' then
      mode = 'split'; splits[#splits+1] = pi; splits[#splits+1] = rformat_ranges(ranges)
    end
  end
  for _ = 1, nb do
    local bucket, org, exp, ne = ARGV[i], tonumber(ARGV[i+1]), ARGV[i+2], tonumber(ARGV[i+3])
    i = i + 4
    if mode == 'apply' then
      if periodic then periodicBucket(bucket, org, exp, ne) else rollingBucket(pi, bucket, ne) end
    end
    i = i + 5 * ne
  end
  if mode == 'apply' then
    local n, c = radd(ranges, first, last)
    closed = closed + c
    redis.call('HSET', KEYS[1], tp, rformat_ranges(n))
  end
end
if late > 0 then redis.call('HINCRBY', P .. 'n', 'late', late) end
if sat > 0 then redis.call('HINCRBY', P .. 'n', 'saturated', sat) end
if closed > 0 then redis.call('HINCRBY', P .. 'n', 'gaps_closed', closed) end
local reply = {applied, skipped, dup, sat, closed, #splits / 2}
for _, v in ipairs(splits) do reply[#reply+1] = v end
reply[#reply+1] = #lates / 2
for _, v in ipairs(lates) do reply[#reply+1] = v end
return reply
`

// expireLua subtracts the slices that have left each window of one rolling
// or windows board, records the last subtracted slice per window in the same
// step, removes members whose total reaches 0, and deletes the slices no
// window needs any more.
//
//	KEYS: 1 the board's last-subtracted hash (P .. 'x'), 2 P .. 's',
//	      3 P .. 'm', 4 P .. 'n', then P .. 'z:<j>' per window, then
//	      P .. 's:<slice>' and P .. 's:<slice>:i' per slice given
//	ARGV: 1 P, 2 tie, 3 rb, 4 res ms, 5 max total, 6 origin ms, 7 windows,
//	      then per window the last slice that has left it at now, then the
//	      number of slices given and the slices (Store.expirePlan)
//
// Every key it touches is declared (see applyKeys), so it first works out
// which slices it needs and answers {-1, 0, 0} without writing when one was
// not given. It then writes each key only after its last read, and deletes
// last: in a slot that is being migrated, Redis fails a command on a key
// that does not exist (here: one the script emptied), and a script that
// fails half-way keeps its earlier writes.
//
// Reply: {subtractions, members removed, slices deleted}.
const expireLua = luaCommon + `
local P = ARGV[1]
setlayout(ARGV[2], ARGV[3], ARGV[4], ARGV[5])
local origin0, nwin = tonumber(ARGV[6]), tonumber(ARGV[7])
local given = {}
for k = 1, tonumber(ARGV[8+nwin]) do given[ARGV[8+nwin+k]] = true end
local mk = P .. 'm'

-- The plan: the slices each window subtracts, and those no window needs.
local plan, T = {}, {}
local lmin
for j = 1, nwin do
  T[j] = tonumber(ARGV[7+j])
  local Lr, L = redis.call('HGET', KEYS[1], j-1), nil
  if Lr then L = tonumber(Lr) end
  if L == nil or T[j] > L then
    local lo = '-inf'
    if L then lo = '(' .. fmt(L) end
    plan[j] = redis.call('ZRANGEBYSCORE', P .. 's', lo, fmt(T[j]))
    L = T[j]
  end
  if lmin == nil or L < lmin then lmin = L end
end
local drop = redis.call('ZRANGEBYSCORE', P .. 's', '-inf', fmt(lmin))
for _, sls in pairs(plan) do
  for _, sl in ipairs(sls) do if not given[sl] then return {-1, 0, 0} end end
end
for _, sl in ipairs(drop) do if not given[sl] then return {-1, 0, 0} end end

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
      local h = redis.call('HGETALL', P .. 's:' .. sl)
      for k = 1, #h, 2 do
        local st = state(h[k])
        if st then
          st[j+1] = st[j+1] - tonumber(h[k+1])
          if st[j+1] < 0 then st[j+1] = 0 end
          ranked[h[k]] = st[j+1] > 0
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
    for jj = 2, nwin + 1 do if st[jj] > 0 then any = true end end
    if any then set[#set+1] = member; set[#set+1] = rformat(st, nwin) else del[#del+1] = member end
  end
end
if #set > 0 then chunked('HSET', mk, set, 1000) end
if #del > 0 then chunked('HDEL', mk, del, 1000) end
if sat > 0 then redis.call('HINCRBY', P .. 'n', 'saturated', sat) end
for _, sl in ipairs(drop) do
  redis.call('DEL', P .. 's:' .. sl, P .. 's:' .. sl .. ':i')
  deleted = deleted + 1
end
if #drop > 0 then redis.call('ZREMRANGEBYSCORE', P .. 's', '-inf', fmt(lmin)) end
return {subtracted, removed, deleted}
`

// readLua reads a page of a ranking and the members' states atomically.
//
//	KEYS: 1 ranking zset, 2 member state hash
//	ARGV: 1 mode: 'top' (2 offset, 3 count), 'member' (2 member),
//	      'around' (2 member, 3 n)
//
// Reply: {members in the zset, rank of the first listed (0-based),
// member, state, score, …}, or {-1} when the member is not ranked.
const readLua = `
local mode = ARGV[1]
local card = redis.call('ZCARD', KEYS[1])
local lo, hi
if mode == 'top' then
  lo = tonumber(ARGV[2]); hi = lo + tonumber(ARGV[3]) - 1
else
  local r = redis.call('ZREVRANK', KEYS[1], ARGV[2])
  if not r then return {-1} end
  if mode == 'member' then lo, hi = r, r else
    local n = tonumber(ARGV[3])
    lo = r - n; if lo < 0 then lo = 0 end
    hi = r + n
  end
end
local reply = {card, lo}
if hi < lo then return reply end
local ms = redis.call('ZREVRANGE', KEYS[1], lo, hi, 'WITHSCORES')
if #ms == 0 then return reply end
local names = {}
for k = 1, #ms, 2 do names[#names+1] = ms[k] end
local sts = redis.call('HMGET', KEYS[2], unpack(names))
for k = 1, #names do
  reply[#reply+1] = names[k]; reply[#reply+1] = sts[k] or ''; reply[#reply+1] = ms[2*k]
end
return reply
`

var (
	applyScript  = redis.NewScript(applyLua)
	expireScript = redis.NewScript(expireLua)
	readScript   = redis.NewScript(readLua)
)
