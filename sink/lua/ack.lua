-- ack.lua (ackLua in scripts.go): clears rooms' pending marks, and drops the
-- stored copies of their outputs, once the output with that seq has been
-- published: the copy exists only to republish after a crash (about 20 bytes
-- per ranked member that idle rooms would otherwise keep). A newer pending
-- output stays pending. One call clears one room's mark or, on a single
-- node, several rooms' (see Options.RoomsPerScript).
--
-- KEYS: the stable hash of each room
-- ARGV: each room's published seq, in the same order
--
-- Reply: 1

for k = 1, #KEYS do
  if redis.call('HGET', KEYS[k], 'pending') == ARGV[k] then redis.call('HDEL', KEYS[k], 'pending', 'out') end
end
return 1
