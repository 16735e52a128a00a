-- ack.lua (ackLua in scripts.go): clears rooms' pending marks, and drops the
-- stored copies of their outputs, once the output with that seq has been
-- published: the copy exists only to republish after a crash (about 20 bytes
-- per ranked member that idle rooms would otherwise keep). A newer pending
-- output stays pending. One call clears one room's mark or, on a single
-- node, several rooms' (see Config.RoomsPerScript).
--
-- KEYS: the stable hash of each room
-- ARGV (ackArgs in scriptargs.go); the script reads it into A at its top,
-- and nothing else reads ARGV:
--   acks  each room's published seq, in the order of KEYS (no count)
--
-- Reply: 1
--
--! include consts.lua

local A = {acks = ARGV}

for k = 1, #KEYS do
  if redis.call('HGET', KEYS[k], FIELD_PENDING) == A.acks[k] then redis.call('HDEL', KEYS[k], FIELD_PENDING, FIELD_OUT) end
end
return 1
