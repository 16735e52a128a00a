-- layout.lua: a room's layout parameters (an opaque JSON object) with a
-- version that only grows, one atomic step on the room's slot. A write and
-- its outbox entry are one step.
--
-- KEYS: 1 seq   hash, no TTL; field layout: the room's last layout version
--       2 lay   hash: v (version), body (the JSON object), at (Unix ms)
--       3 out   hash, no TTL: the outbox; "y:<version>" → layout record,
--               "l:y:<version>" → Unix ms at which its writer's lease ends
-- ARGV: 1 op        1 put, 2 get
--       2 room      the room id as a JSON string (put)
--       3 body      the JSON object (put)
--       4 if-match  put: "" none, "*" any existing layout, else a version
--       5 persist   put: 1 keeps the layout without TTL, 0 expires it
--                   with the room
--       6 room ttl  ms (put)
--       7 lease     ms a new outbox entry stays its writer's to publish
-- Reply: put {code, version, field, record, expired}
--          code 1 stored (version is the new one); 2 precondition failed
--          (version is the current one, 0 when there is none)
--        get {3, version (0: none), body, "", expired}
--        expired: outbox entries whose lease has ended (their writer died)

local OP_PUT, OP_GET = '1', '2' -- luacheck: ignore 211 (OP_PUT names the other mode)
local STORED, STALE, GOT = 1, 2, 3

--! include clock.lua

local cur = redis.call('HMGET', KEYS[2], 'v', 'body')
local version = cur[1] or '0'
if ARGV[1] == OP_GET then
  return {GOT, version, cur[2] or '', '', expired(KEYS[3])}
end

local want = ARGV[4]
if (want == '*' and version == '0') or (want ~= '' and want ~= '*' and want ~= version) then
  return {STALE, version, '', '', expired(KEYS[3])}
end

local v = f(redis.call('HINCRBY', KEYS[1], 'layout', 1))
redis.call('HSET', KEYS[2], 'v', v, 'body', ARGV[3], 'at', f(now))
if ARGV[5] == '1' then
  redis.call('PERSIST', KEYS[2])
else
  redis.call('PEXPIRE', KEYS[2], ARGV[6])
end
local record = '{"room_id":' .. ARGV[2] .. ',"version":' .. v .. ',"at":' .. f(now) ..
  ',"persist":' .. (ARGV[5] == '1' and 'true' or 'false') .. ',"layout":' .. ARGV[3] .. '}'
local field = 'y:' .. v
redis.call('HSET', KEYS[3], field, record, 'l:' .. field, f(now + tonumber(ARGV[7])))
return {STORED, v, field, record, expired(KEYS[3])}
