-- rebase.lua (rebaseLua in scripts.go): moves a decay board's base to its
-- target without an event (Store.Expire's tick), so that the base follows
-- the clock while no event arrives.
--
-- KEYS: total boards: 1 P .. 'T:b', 2 P .. 'T:m', 3 P .. 'T:z';
--       rolling boards: 1 P .. 'b', 2 P .. 'm', 3 P .. 'z:0', 4 P .. 's',
--       then P .. 's:<slice>' per slice held (read just before)
-- ARGV (rebaseArgs in scriptargs.go), in order; the script reads
-- them into A under these names at its top, and nothing else reads ARGV:
--   prefix    P
--   target    the target base
--   floor     the floor ('' = none)
--   maxTotal  the largest total ranked
--   kind      KIND_TOTAL or KIND_ROLLING (consts.lua)
--   origin    rolling: the epoch, ms
--
-- Reply: {base in force, sums rewritten}, or (rolling) {0, 0, 1} without
-- writing when a slice to rewrite was not declared.
--
--! include consts.lua
--! include score.lua
--! include decay.lua

local A = {prefix = ARGV[1], target = tonumber(ARGV[2]), floor = ARGV[3], maxTotal = ARGV[4], kind = ARGV[5],
  origin = tonumber(ARGV[6])}

setlayout('0', '0', '1', A.maxTotal, A.floor)
if A.kind == KIND_ROLLING then
  local declared = {}
  for _, key in ipairs(KEYS) do declared[key] = true end
  local k, n = rebaseRolling(A.prefix, A.target, declared, A.origin)
  if k == nil then return {0, 0, 1} end
  return {k, n}
end
local k, n = rebase(A.prefix, A.target)
return {k, n}
