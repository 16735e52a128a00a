-- ack.lua (ackLua in scripts.go): clears a room's pending mark, and drops the
-- stored copy of the output, once the output with that seq has been
-- published: the copy exists only to republish after a crash (about 20 bytes
-- per ranked member that idle rooms would otherwise keep). A newer pending
-- output stays pending.
--
-- KEYS: 1 stable hash
-- ARGV: 1 published seq
--
-- Reply: 1

if redis.call('HGET', KEYS[1], 'pending') == ARGV[1] then redis.call('HDEL', KEYS[1], 'pending', 'out') end
return 1
