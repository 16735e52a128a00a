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
-- ARGV (restoreArgs in scriptargs.go), in order; the script reads them into
-- A under these names at its top, and nothing else reads ARGV:
--   seq    the seed's seq
--   list   its list, comma-separated
--   ttl    the room's TTL, ms
--   state  its hysteresis state ('': none)
--
-- Reply: 1 seeded, 0 the room already had a seq at least the seed's
--
--! include consts.lua

local A = {seq = ARGV[1], list = ARGV[2], ttl = ARGV[3], state = ARGV[4]}

local seq = redis.call('HGET', KEYS[1], FIELD_SEQ)
if seq and tonumber(seq) >= tonumber(A.seq) then return 0 end
redis.call('HDEL', KEYS[1], FIELD_PENDING, FIELD_OUT)
if A.state == '' then redis.call('HDEL', KEYS[1], FIELD_H_STATE) end
redis.call('HSET', KEYS[1], FIELD_SEQ, A.seq, FIELD_LIST, A.list)
if A.state ~= '' then redis.call('HSET', KEYS[1], FIELD_H_STATE, A.state) end
redis.call('PEXPIRE', KEYS[1], A.ttl)
return 1
