-- restore.lua (restoreLua in scripts.go): after Redis lost its data,
-- restores a board's frozen mark and index of settled periods from the
-- records published on {env}.boards.settled (Store.RestoreSettled,
-- restore.go), so that no period is settled and published twice. The
-- snapshots are in the periods' own slots (restoreperiod.lua, run first).
--
-- KEYS: 1 the settle state P .. 'st', 2 the settled periods P .. 'SL'
-- ARGV (restoreArgs in scriptargs.go), in order; the script reads
-- them into A under these names at its top, and nothing else reads ARGV:
--   newest     the newest settled label
--   retention  settle-retention
--   periods    per period kept, to the end (no count): label, period
--              start ms
--
-- The frozen mark only moves forward (a settlement that ran since keeps
-- its own).
--
-- Reply: 0.
--
--! include consts.lua

-- decode reads ARGV (the layout above) into A.
local function decode()
  local A = {newest = ARGV[1], retention = tonumber(ARGV[2]), periods = {}}
  for i = 3, #ARGV - 1, 2 do A.periods[#A.periods + 1] = {label = ARGV[i], start = ARGV[i+1]} end
  return A
end
local A = decode()

local frozen = redis.call('HGET', KEYS[1], FIELD_FROZEN)
if not frozen or frozen < A.newest then redis.call('HSET', KEYS[1], FIELD_FROZEN, A.newest) end
for _, p in ipairs(A.periods) do
  redis.call('ZADD', KEYS[2], p.start, p.label)
end
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -A.retention - 1)
return 0
