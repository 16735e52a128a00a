-- commit.lua (commitLua in scripts.go): stores a room's new stable list and
-- hysteresis state if neither the stable list, nor the ranking, nor the state
-- changed since they were read (compare-and-set on seq, the ranking version
-- and the state), and marks the output as pending until the publisher
-- acknowledges it. With ARGV[8] = 0 it stores the state alone: the list did
-- not change, so there is no new seq and no output (a challenger began to
-- wait, say).
--
-- KEYS: 1 stable hash
-- ARGV: 1 seq read, 2 version read, 3 new list, 4 output record, 5 ttl ms,
--       6 state read, 7 new state ("" for none), 8 new list (1) or state
--       only (0)
--
-- Reply: 1 stored (with a new list, the new seq is ARGV[1]+1), 0 something
-- moved on meanwhile.

local st = redis.call('HMGET', KEYS[1], 'seq', 'v', 'h')
local seq = tonumber(st[1] or '0')
if seq ~= tonumber(ARGV[1]) or tonumber(st[2] or '0') ~= tonumber(ARGV[2]) or (st[3] or '') ~= ARGV[6] then return 0 end
if ARGV[8] == '1' then
  redis.call('HSET', KEYS[1], 'seq', seq+1, 'list', ARGV[3], 'out', ARGV[4], 'pending', seq+1)
end
if ARGV[7] == '' then redis.call('HDEL', KEYS[1], 'h') else redis.call('HSET', KEYS[1], 'h', ARGV[7]) end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
