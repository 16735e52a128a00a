-- restoreperiod.lua (restorePeriodLua in scripts.go): after Redis lost its
-- data, restores one settled period of a periodic board in the period's
-- own slot (Store.RestoreSettled, restore.go); restore.lua
-- restores the board's frozen mark and index.
--
-- KEYS: 1 the period's settle state P .. 'st', 2 its snapshot P .. 'S',
--       3 the snapshot's info P .. 'S:i' (P the period's prefix)
-- ARGV: 1 label, 2 expire-at ms of the snapshot, 3 expire-at ms of the
--       settle state, 4 info ("members closed_at"), then the entries
--       ("total reached member", in rank order)
--
-- The period is marked frozen (apply.lua finds its events late); a
-- snapshot that exists is left alone.
--
-- Reply: 1 when the snapshot was written, else 0.

redis.call('HSET', KEYS[1], 'frozen', ARGV[1])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
redis.call('DEL', KEYS[2])
for a = 5, #ARGV, 1000 do
  redis.call('RPUSH', KEYS[2], unpack(ARGV, a, math.min(a + 999, #ARGV)))
end
redis.call('SET', KEYS[3], ARGV[4])
redis.call('PEXPIREAT', KEYS[2], ARGV[2])
redis.call('PEXPIREAT', KEYS[3], ARGV[2])
return 1
