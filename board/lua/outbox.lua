-- outbox.lua (outboxLua in scripts.go): the records of settled periods
-- waiting to be published (settle.lua writes them).
--
-- KEYS: 1 the board's outbox hash P .. 'o': field <label> → record JSON,
--       field 'c:<label>' → "token until-ms" (a claim)
-- ARGV (outboxArgs in scriptargs.go), in order; the script reads
-- them into A under these names at its top, and nothing else reads ARGV:
--   action    OUTBOX_CLAIM or OUTBOX_ACK (consts.lua)
--   token     claim: the claimer's token
--   now       claim: now, ms
--   lease     claim: the lease, ms
--   label     ack: the record's period
--
-- A claim claims, for token until now + lease, the records (at most 16) that
-- no claim holds at now, so that two processors do not publish one record
-- at once; a claim that ran out (its processor died before it published
-- and acknowledged) is taken over. An ack deletes the record and its
-- claim: the broker has it.
--
-- Reply: claim: {label, record, ...}; ack: the fields deleted.

--! include consts.lua

local A = {action = ARGV[1], token = ARGV[2], now = tonumber(ARGV[3]), lease = tonumber(ARGV[4]), label = ARGV[5]}

if A.action == OUTBOX_ACK then
  return redis.call('HDEL', KEYS[1], A.label, 'c:' .. A.label)
end
local now, lease = A.now, A.lease
local h = redis.call('HGETALL', KEYS[1])
local claims, out = {}, {}
for k = 1, #h, 2 do
  if string.sub(h[k], 1, 2) == 'c:' then
    local sp = string.find(h[k+1], ' ', 1, true)
    claims[string.sub(h[k], 3)] = tonumber(string.sub(h[k+1], sp + 1))
  end
end
for k = 1, #h, 2 do
  local f = h[k]
  if string.sub(f, 1, 2) ~= 'c:' and (claims[f] == nil or claims[f] <= now) and #out < 32 then
    redis.call('HSET', KEYS[1], 'c:' .. f, A.token .. ' ' .. string.format('%.0f', now + lease))
    out[#out+1] = f; out[#out+1] = h[k+1]
  end
end
return out
