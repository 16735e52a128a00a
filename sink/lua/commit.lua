-- commit.lua (commitLua in scripts.go): stores a room's new stable list and
-- hysteresis state if neither the stable list, nor the ranking, nor the state
-- changed since they were read (compare-and-set on seq, the ranking version
-- and the state), and marks the output as pending until the publisher
-- acknowledges it. Without withList it stores the state alone: the list did
-- not change, so there is no new seq and no output (a challenger began to
-- wait, say).
--
-- KEYS: 1 stable hash
-- ARGV (commitArgs in scriptargs.go), in order; the script reads them into
-- A under these names at its top, and nothing else reads ARGV:
--   seq        the seq read
--   version    the ranking version read
--   list       the new list, comma-separated
--   out        its output record
--   ttl        the room's TTL, ms
--   prevState  the hysteresis state read ('': none)
--   state      the new hysteresis state ('': none)
--   withList   store the list and its output (1), or the state only (0)
--
-- Reply: 1 stored (with a new list, the new seq is A.seq+1), 0 something
-- moved on meanwhile.
--
--! include consts.lua

local A = {seq = tonumber(ARGV[1]), version = tonumber(ARGV[2]), list = ARGV[3], out = ARGV[4], ttl = ARGV[5],
  prevState = ARGV[6], state = ARGV[7], withList = ARGV[8] == '1'}

local st = redis.call('HMGET', KEYS[1], FIELD_SEQ, FIELD_VERSION, FIELD_H_STATE)
local seq = tonumber(st[1] or '0')
if seq ~= A.seq or tonumber(st[2] or '0') ~= A.version or (st[3] or '') ~= A.prevState then return 0 end
if A.withList then
  redis.call('HSET', KEYS[1], FIELD_SEQ, seq+1, FIELD_LIST, A.list, FIELD_OUT, A.out, FIELD_PENDING, seq+1)
end
if A.state == '' then redis.call('HDEL', KEYS[1], FIELD_H_STATE) else redis.call('HSET', KEYS[1], FIELD_H_STATE, A.state) end
redis.call('PEXPIRE', KEYS[1], A.ttl)
return 1
