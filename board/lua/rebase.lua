-- rebase.lua (rebaseLua in scripts.go): moves a decay board's base to its
-- target without an event (Store.Expire's tick), so that the base follows
-- the clock while no event arrives.
--
-- KEYS: total boards: 1 P .. 'T:b', 2 P .. 'T:m', 3 P .. 'T:z';
--       rolling boards: 1 P .. 'b', 2 P .. 'm', 3 P .. 'z:0', 4 P .. 's',
--       then P .. 's:<slice>' per slice held (read just before)
-- ARGV: 1 P, 2 target base, 3 floor ('' = none), 4 max score, 5 kind ('t'
--       total, 'r' rolling), 6 origin ms (rolling)
--
-- Reply: {base in force, sums rewritten}, or (rolling) {0, 0, 1} without
-- writing when a slice to rewrite was not declared.
--
--! include score.lua
--! include decay.lua

setlayout('0', '0', '1', ARGV[4], ARGV[3])
if ARGV[5] == 'r' then
  local declared = {}
  for _, key in ipairs(KEYS) do declared[key] = true end
  local k, n = rebaseRolling(ARGV[1], tonumber(ARGV[2]), declared, tonumber(ARGV[6]))
  if k == nil then return {0, 0, 1} end
  return {k, n}
end
local k, n = rebase(ARGV[1], tonumber(ARGV[2]))
return {k, n}
