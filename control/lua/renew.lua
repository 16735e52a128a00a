-- renew.lua (renewScript in scripts.go): extends the lease of an outbox
-- entry whose publisher is still waiting for its produce to resolve, if the
-- lease has not ended (so the entry is still that publisher's: no claim
-- takes an entry before its lease ends).
--
-- KEYS: 1 outbox hash
-- ARGV: 1 field, 2 lease ms
--
-- Reply: 1 when the lease now ends lease ms from now, 0 when the entry is
-- gone or its lease had ended (nothing written).

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local l = tonumber(redis.call('HGET', KEYS[1], 'l:' .. ARGV[1]) or '0')
if l <= now or redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'l:' .. ARGV[1], string.format('%.0f', now + tonumber(ARGV[2])))
return 1
