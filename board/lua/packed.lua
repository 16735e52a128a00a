-- packed.lua: a windows board's member state, shared by apply.lua and
-- expirew.lua (each includes it after score.lua, slices.lua and
-- wstate.lua with "--! include packed.lua").
--
-- A windows board keeps each member in one field of P .. 'm':
--
--   head .. due .. segments
--
-- the head (wstate.lua) holds the reached time and the window totals,
-- which the read scripts return as text; due is the member's due time
-- (below), and the segments hold every slice of the member that a window
-- still holds, one segment per slice set (slices.lua) that holds some, in
-- any order:
--
--   q, body length, last slice − first slice, offset of the last entry in
--   the body, body
--   body: the first slice, then an entry per slice in ascending order
--
-- all varints; a slice index or time x is written 2·|x| + sign. An entry
-- is 2·sum when the slice follows the one before it and its sum is not
-- negative (the rule for an item active in every slice: one or two bytes
-- a slice); else 2·|sum| + 1 and gap·2 + sign of the sum (gap: the slice
-- index minus the one before, 0 for the first), or, when the sum is 0 or
-- |sum| ≥ 2^52, 1, gap·2 + sign and |sum|. Every number is an integer
-- below 2^54 and exact in Lua's doubles (an odd one below 2^53); a sum is
-- kept within ±MAX_SUM (2^53 − 1, consts.lua) by the callers. A member's slices are
-- one value: one hash entry per member instead of one per slice hash
-- (docs/DESIGN.md §8, "Windows boards: packed slices"). The last
-- slice and its offset let an event for the newest slice of each set, the
-- common case, rewrite the segment's tail without decoding the rest
-- (wquick).
--
-- A member's due time is the time (ms, before grace) at which its first
-- slice leaves a window: min over windows j of (s + n_j)·g_j for the
-- member's lowest slice s of j's slice set above j's last subtracted
-- slice, n_j the window's slices and g_j their length in ms
-- (Board.ExpiredThrough: slice s has left window j at t = now − grace
-- when s ≤ floor(t/g_j) − n_j). It depends only on the member's slices
-- and the last subtracted slices, and an expiry that moves those changes
-- it only for the members it finds due.
--
-- The expiry index P .. 'e' is a hash: due time → the members listed at
-- it, each followed by a space. A member is listed at its due time
-- whenever that changes (windex, written by wflush); the listing it leaves
-- behind stays until its time comes, when the expiry finds the member not
-- due and passes over it (or finds no state: removed). So every member
-- with a state is listed at its due time, at a dozen bytes a member where
-- a sorted set entry costs over a hundred.
--
-- wlengths(a) reads "slicems:n1,…,nk"; wparse(raw, nwin, known, need)
-- returns the state, the slices (q → {s = {indices}, v = {sums}}, or the
-- segment's bytes for a set not in need) of the sets in known (q → true)
-- and the due time; wformat writes them back; wadd adds
-- to a slice; wcell reads one; wdue computes the member's due time (nil:
-- no window holds any of its slices); wquick adds to the newest slices
-- without decoding; windex lists a member at a due time and wflush
-- writes the listings to the index hash.
--
-- luacheck: read globals MAX_SUM fmt vgets whead wstate

local function wlengths(a)
  local ms, rest = string.match(a, '^(%d+):(.*)$')
  local n = {}
  for x in string.gmatch(rest, '%d+') do n[#n+1] = tonumber(x) end
  return tonumber(ms), n
end

-- The slices are read into and written from tables of byte values: one
-- string.byte or string.char call per few thousand bytes rather than one
-- per byte.
local function vput(out, x)
  local n = #out
  while x >= 128 do
    local r = x % 128
    n = n + 1
    out[n] = 128 + r
    x = (x - r) / 128
  end
  out[n + 1] = x
end

local function vget(b, p)
  local c = b[p]
  if c < 128 then return c, p + 1 end
  local x, m = c - 128, 128
  while true do
    p = p + 1
    c = b[p]
    if c < 128 then return x + c * m, p + 1 end
    x = x + (c - 128) * m
    m = m * 128
  end
end

local function zz(x)
  if x < 0 then return -2 * x + 1 end
  return 2 * x
end
local function unzz(x)
  local h = (x - x % 2) / 2
  if x % 2 == 1 then return -h end
  return h
end
-- venc returns the varints of its arguments as a string.
local function venc(...)
  local out = {}
  for _, x in ipairs({...}) do vput(out, x) end
  return string.char(unpack(out))
end
-- wentry appends to byte table out the entry of a slice gap after the
-- one before it, holding sum a.
local function wentry(out, gap, a)
  if gap == 1 and a >= 0 then
    vput(out, 2 * a)
    return
  end
  local sign = 0
  if a < 0 then sign = 1; a = -a end
  if a > 0 and a < 4503599627370496 then -- 2^52: 2·a + 1 is exact (1 is the long form)
    vput(out, 2 * a + 1)
    vput(out, gap * 2 + sign)
  else
    vput(out, 1)
    vput(out, gap * 2 + sign)
    vput(out, a)
  end
end
-- wentryget reads an entry with get (vget on a byte table, vgets on a
-- string) at p: its gap, its sum and the position after it.
local function wentryget(get, b, p)
  local x, g
  x, p = get(b, p)
  if x % 2 == 0 then return 1, x / 2, p end
  g, p = get(b, p)
  local a = (x - 1) / 2
  if x == 1 then a, p = get(b, p) end
  if g % 2 == 1 then return (g - 1) / 2, -a, p end
  return g / 2, a, p
end
local function wentrys(gap, a)
  local out = {}
  wentry(out, gap, a)
  return string.char(unpack(out))
end

-- wparse decodes the segments of the sets in need (all when need is nil);
-- another set is kept as its segment's bytes (raw, its body at boff),
-- which wformat writes back as they are and wdue reads only as far as it
-- must.
local function wparse(raw, nwin, known, need)
  local sl = {}
  if not raw then
    local st = {}
    for k = 1, nwin + 1 do st[k] = 0 end
    return st, sl, nil
  end
  local st, bar = wstate(raw, nwin)
  bar = bar - 1 -- b[k] below is raw's byte bar + k
  local b, len = {}, #raw
  if len - bar <= 4000 then
    b = {string.byte(raw, bar + 1, len)}
  else
    for a = bar + 1, len, 4000 do
      local part = {string.byte(raw, a, math.min(a + 3999, len))}
      local o = #b
      for k = 1, #part do b[o + k] = part[k] end
    end
  end
  local dz, p = vget(b, 1)
  local nb = #b
  while p <= nb do
    local seg = p
    local q, blen, x
    q, p = vget(b, p)
    blen, p = vget(b, p)
    p = select(2, vget(b, p)) -- the last slice and its offset: wquick reads them
    p = select(2, vget(b, p))
    local stop = p + blen
    if need and not need[q] then
      -- bytes b[k] are raw's at bar + k
      if known[q] then sl[q] = {raw = string.sub(raw, bar + seg, bar + stop - 1), boff = p - seg + 1} end
      p = stop
    else
      x, p = vget(b, p)
      local s = unzz(x)
      local ss, vv, k = {}, {}, 0
      while p < stop do
        local g, a
        g, a, p = wentryget(vget, b, p)
        s = s + g
        k = k + 1
        ss[k] = s; vv[k] = a
      end
      -- A set no window keeps any more (the board's windows changed) is
      -- dropped.
      if known[q] then sl[q] = {s = ss, v = vv} end
    end
  end
  return st, sl, unzz(dz)
end

local function wformat(st, sl, nwin, due)
  local parts = {whead(st, nwin), venc(zz(due))}
  for q, set in pairs(sl) do
    local n = 0
    if set.raw then
      parts[#parts + 1] = set.raw
    else
      n = #set.s
    end
    if n > 0 then
      local out = {}
      vput(out, zz(set.s[1]))
      local prev, lastoff = set.s[1], 0
      for k = 1, n do
        lastoff = #out + 1
        -- The first entry's gap is 0: never the short form.
        wentry(out, set.s[k] - prev, set.v[k])
        prev = set.s[k]
      end
      parts[#parts + 1] = venc(q, #out, prev - set.s[1], lastoff)
      for a = 1, #out, 4000 do
        parts[#parts + 1] = string.char(unpack(out, a, math.min(a + 3999, #out)))
      end
    end
  end
  return table.concat(parts)
end

-- wquick adds v to slice adds[q] of each set q in adds when that is the
-- set's newest slice or newer, rewriting only the tail of its segments.
-- It returns the member's state (wstate), its due time, the segments after
-- the add, and the new sum of each slice added to; or nil when a slice is
-- older than its set's newest (then the caller decodes in full). It
-- writes nothing.
local function wquick(raw, adds, v, nwin)
  local st, p0 = wstate(raw, nwin)
  local dz, p = vgets(raw, p0)
  local out, cells, len = {}, {}, #raw
  while p <= len do
    local seg = p
    local q, blen, lastd, lastoff
    q, p = vgets(raw, p)
    blen, p = vgets(raw, p)
    lastd, p = vgets(raw, p)
    lastoff, p = vgets(raw, p)
    local b0 = p
    p = b0 + blen
    local s = adds[q]
    if s == nil then
      out[#out + 1] = string.sub(raw, seg, p - 1)
    else
      local first = unzz(vgets(raw, b0))
      local last = first + lastd
      if s < last then return nil end
      local nb
      if s == last then
        local g, a = wentryget(vgets, raw, b0 + lastoff - 1)
        cells[q] = a + v
        nb = string.sub(raw, b0, b0 + lastoff - 2) .. wentrys(g, a + v)
      else
        cells[q] = v
        lastoff = blen + 1
        nb = string.sub(raw, b0, p - 1) .. wentrys(s - last, v)
      end
      out[#out + 1] = venc(q, #nb, s - first, lastoff) .. nb
    end
  end
  for q, s in pairs(adds) do
    if cells[q] == nil then -- the member's first slice in set q
      local first = venc(zz(s))
      local nb = first .. wentrys(0, v)
      out[#out + 1] = venc(q, #nb, 0, #first + 1) .. nb
      cells[q] = v
    end
  end
  return st, unzz(dz), table.concat(out), cells
end

-- wcell returns the sum of slice s of set q (0 when not held).
local function wcell(sl, q, s)
  local set = sl[q]
  if not set then return 0 end
  for k = #set.s, 1, -1 do
    if set.s[k] == s then return set.v[k] end
    if set.s[k] < s then return 0 end
  end
  return 0
end

-- wadd adds v to slice s of set q, inserting it in order (new slices come
-- last as a rule: the search starts there).
local function wadd(sl, q, s, v)
  local set = sl[q]
  if not set then set = {s = {}, v = {}}; sl[q] = set end
  local k = #set.s
  while k >= 1 and set.s[k] > s do k = k - 1 end
  if k >= 1 and set.s[k] == s then
    set.v[k] = set.v[k] + v
    return
  end
  table.insert(set.s, k + 1, s)
  table.insert(set.v, k + 1, v)
end

-- wdue returns the time at which the member's first slice leaves a window
-- (L: per window its last subtracted slice, nil for none yet), or nil.
local function wdue(sl, nwin, wq, wn, slicems, L)
  local due = nil
  for j = 1, nwin do
    local set = sl[wq[j]]
    local s = nil
    if set and set.raw then
      -- Kept as bytes: read its slices up to the first above L[j].
      local r = set.raw
      local x, p = vgets(r, set.boff)
      local x0 = unzz(x)
      local stop = #r + 1
      while p < stop do
        local g, _, np = wentryget(vgets, r, p)
        p = np
        x0 = x0 + g
        if L[j] == nil or x0 > L[j] then s = x0; break end
      end
    elseif set then
      for k = 1, #set.s do
        if L[j] == nil or set.s[k] > L[j] then s = set.s[k]; break end
      end
    end
    if s then
      local d = (s + wn[j]) * slicems * wq[j]
      if due == nil or d < due then due = d end
    end
  end
  return due
end

-- wprune drops the slices no window needs any more: at or below
-- lmin[q], the lowest last subtracted slice of the windows of set q.
-- Returns the number dropped.
local function wprune(sl, lmin)
  local n = 0
  for q, set in pairs(sl) do
    local lm = lmin[q]
    if set.raw then lm = nil end -- not decoded: its windows did not move
    local k = 0
    if lm ~= nil then
      while k < #set.s and set.s[k+1] <= lm do k = k + 1 end
    end
    if k > 0 then
      local s, v = {}, {}
      for a = k + 1, #set.s do s[#s+1] = set.s[a]; v[#v+1] = set.v[a] end
      set.s, set.v = s, v
      n = n + k
    end
    if not set.raw and #set.s == 0 then sl[q] = nil end
  end
  return n
end

-- windex lists member at due time d (ms) in the index; wflush appends
-- the listings to the index hash ek, one write per due time.
local wlisted = {}
local function windex(d, member)
  local k = fmt(d)
  local l = wlisted[k]
  if not l then l = {}; wlisted[k] = l end
  l[#l+1] = member
end
local function wflush(ek)
  for k, l in pairs(wlisted) do
    local old = redis.call('HGET', ek, k) or ''
    redis.call('HSET', ek, k, old .. table.concat(l, ' ') .. ' ')
  end
  wlisted = {}
end
