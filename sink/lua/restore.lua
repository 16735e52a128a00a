-- restore.lua (restoreLua in scripts.go): seeds a room's stable hash unless
-- it already has a seq at least the seed's: after a loss the room has none;
-- after Redis went back in time (ErrRedisRolledBack) it has an older one,
-- whose list and pending output the seed replaces, so that seq never repeats
-- with other content.
--
-- The output itself is already published, so it is not kept. The stable
-- state is replaced by the seed's (the flags of the list's members as
-- published; the hysteresis timers are lost with the data), or removed.
--
-- KEYS: 1 stable hash
-- ARGV: 1 seq, 2 list, 3 ttl ms, 4 stable state ("": none)
--
-- Reply: 1 seeded, 0 the room already had a seq at least the seed's

local seq = redis.call('HGET', KEYS[1], 'seq')
if seq and tonumber(seq) >= tonumber(ARGV[1]) then return 0 end
redis.call('HDEL', KEYS[1], 'pending', 'out')
if ARGV[4] == '' then redis.call('HDEL', KEYS[1], 'h') end
redis.call('HSET', KEYS[1], 'seq', ARGV[1], 'list', ARGV[2])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'h', ARGV[4]) end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
