-- ranges.lua: the applied offset ranges of one topic-partition, included by
-- apply.lua ("--! include ranges.lua"): a sorted list of disjoint,
-- non-adjacent {lo, hi}, stored as "lo-hi,lo-hi" (offsets are never
-- negative). MAX_RANGES (consts.lua) is the most ranges kept per board and
-- topic-partition.
--
-- radd merges [a, b] in and returns the new list and the number of gaps it
-- closed to keep at most MAX_RANGES ranges: the narrowest gap (the lowest of
-- equal ones) is marked applied. A gap between ranges is offsets no applier
-- has marked yet: a range still to be replayed from another write-ahead
-- log, or offsets that hold no record (transaction markers, compacted
-- records) between two batches. Closing it is the old watermark semantics:
-- its records, if any, are never applied afterwards (never applied twice).
--
-- luacheck: read globals MAX_RANGES

local function rparse_ranges(s)
  local r = {}
  if not s then return r end
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
  while #out > MAX_RANGES do
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
