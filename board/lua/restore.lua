-- restore.lua (restoreLua in scripts.go): after Redis lost its data,
-- restores a board's frozen mark and index of settled periods from the
-- records published on {env}.boards.settled (Store.RestoreSettled,
-- restore.go), so that no period is settled and published twice. The
-- snapshots are in the periods' own slots (restoreperiod.lua, run first).
--
-- KEYS: 1 the settle state P .. 'st', 2 the settled periods P .. 'SL'
-- ARGV: 1 the newest settled label, 2 settle-retention, then per label
--       kept: label, period start ms
--
-- The frozen mark only moves forward (a settlement that ran since keeps
-- its own).
--
-- Reply: 0.

local frozen = redis.call('HGET', KEYS[1], 'frozen')
if not frozen or frozen < ARGV[1] then redis.call('HSET', KEYS[1], 'frozen', ARGV[1]) end
for i = 3, #ARGV - 1, 2 do
  redis.call('ZADD', KEYS[2], ARGV[i+1], ARGV[i])
end
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -tonumber(ARGV[2]) - 1)
return 0
