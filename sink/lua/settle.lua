-- settle.lua (settleLua in scripts.go): moves a room's due entry from the
-- deadline the caller read to the next one, or removes it when there is
-- none, unless the entry changed meanwhile (see due.go).
--
-- KEYS: 1 due set
-- ARGV: 1 room, 2 deadline read, 3 next deadline (0: none)
--
-- Reply: 1 moved or removed, 0 the entry changed meanwhile

local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s or tonumber(s) ~= tonumber(ARGV[2]) then return 0 end
if ARGV[3] == '0' then redis.call('ZREM', KEYS[1], ARGV[1]) else redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1]) end
return 1
