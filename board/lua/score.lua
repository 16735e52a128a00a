-- score.lua: the score of a member, and the rolling member state, shared by
-- apply.lua, expire.lua, expirew.lua, rebase.lua and settle.lua (each
-- includes it after consts.lua with "--! include score.lua").
--
--   score = t*2^rb + (2^rb - 1 - floor((reached - origin)/res))   (tie: first-reached)
--   score = t                                                     (tie: none)
--   t = max(total, floor) (no floor: total), clamped to -maxt..maxt
--
-- Every value is an integer below 2^53, exact in Lua's doubles; string.format
-- with %.0f writes it exactly (tostring would round to 14 digits).
--
-- setlayout(tie, rb, res, maxt, floor) sets the board's layout from ARGV
-- strings (floor '' or nil: none);
-- score(total, reached, origin) returns the score as a string and counts in
-- sat the totals it saturated at maxt; clampsum keeps a decay board's sum
-- exact; rparse and rformat read and write a rolling member state,
-- "reached t1 ... tk"; unscore and exact serve boards whose score holds
-- the member state (a periodic first-reached board at 1 ms, apply.lua).
--
-- luacheck: read globals MAX_SUM

local function fmt(x) return string.format('%.0f', x) end
local tie, rb, res, maxt = false, 0, 1, 0
local R = 1
local sat = 0
local tfloor = nil
local function setlayout(t, b, r, m, f)
  tie = t == '1'; rb = tonumber(b); res = tonumber(r); maxt = tonumber(m); R = 2^rb
  if f ~= nil and f ~= '' then tfloor = tonumber(f) end
end
local function score(total, reached, origin)
  local t = total
  if tfloor ~= nil and t < tfloor then t = tfloor end
  if t > maxt then t = maxt; sat = sat + 1 elseif t < -maxt then t = -maxt; sat = sat + 1 end
  if not tie then return fmt(t) end
  local rel = math.floor((reached - origin) / res)
  if rel < 0 then rel = 0 elseif rel > R - 1 then rel = R - 1 end
  return fmt(t * R + (R - 1 - rel))
end
-- unscore(s, origin): the total and reached time a first-reached score
-- encodes (origin: the period start), exact when the total was in range
-- and the resolution 1 ms.
local function unscore(s, origin)
  local t = math.floor(s / R)
  return t, origin + (R - 1 - (s - t * R)) * res
end
-- exact(total): whether the score holds this total as it is (not raised
-- to the floor, not saturated at maxt).
local function exact(total)
  if tfloor ~= nil and total < tfloor then return false end
  return total <= maxt and total >= -maxt
end
-- clampsum(x): a decay board's sum kept within ±(2^53 − 1), the exact
-- range, counting in sat a sum it clamped
local function clampsum(x)
  if x > MAX_SUM then sat = sat + 1; return MAX_SUM end
  if x < -MAX_SUM then sat = sat + 1; return -MAX_SUM end
  return x
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
