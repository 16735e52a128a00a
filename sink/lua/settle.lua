-- settle.lua (settleLua in scripts.go): moves a room's due entry from the
-- deadline the caller read to the next one, or removes it when there is
-- none, unless the entry changed meanwhile (see due.go).
--
-- KEYS: 1 due set
-- ARGV (settleArgs in scriptargs.go), in order; the script reads them into
-- A under these names at its top, and nothing else reads ARGV:
--   room  the room, the due set's member
--   at    the deadline read, Unix ms
--   next  the next deadline, Unix ms (0: none, the entry is removed)
--
-- Reply: 1 moved or removed, 0 the entry changed meanwhile

local A = {room = ARGV[1], at = tonumber(ARGV[2]), next = ARGV[3]}

local s = redis.call('ZSCORE', KEYS[1], A.room)
if not s or tonumber(s) ~= A.at then return 0 end
if A.next == '0' then redis.call('ZREM', KEYS[1], A.room) else redis.call('ZADD', KEYS[1], A.next, A.room) end
return 1
