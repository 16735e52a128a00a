-- rebase.lua (rebaseLua in scripts.go): moves a decay board's base to its
-- target without an event (Store.Expire's tick), so that the base follows
-- the clock while no event arrives.
--
-- KEYS: 1 P .. 'T:b', 2 P .. 'T:m', 3 P .. 'T:z'
-- ARGV: 1 P, 2 target base, 3 floor ('' = none), 4 max score
--
-- Reply: {base in force, members rewritten}.
--
--! include score.lua
--! include decay.lua

setlayout('0', '0', '1', ARGV[4], ARGV[3])
local k, n = rebase(ARGV[1], tonumber(ARGV[2]))
return {k, n}
