-- claim.lua: takes over the outbox entries of a room whose writer's lease
-- has ended (the writer died between its state change and its publish, or
-- could not publish), leasing them to the caller, who publishes them and
-- then deletes them (HDEL field, "l:" .. field).
--
-- KEYS: 1 out   hash: the room's outbox (see recording.lua, layout.lua)
-- ARGV: 1 lease ms the claimed entries stay the caller's
-- Reply: {left, field1, record1, field2, record2, ...}
--        left     entries still leased to a live writer (not claimed)
--        field_i  the outbox field ("c:<token>" or "y:<version>"), in
--                 increasing token / version order per kind
--        record_i the record to publish

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local kv = redis.call('HGETALL', KEYS[1])
local h = {}
for i = 1, #kv, 2 do h[kv[i]] = kv[i + 1] end

local left, fields = 0, {}
for k, v in pairs(h) do
  if string.sub(k, 1, 2) == 'l:' then
    if tonumber(v) <= now then fields[#fields + 1] = string.sub(k, 3) else left = left + 1 end
  end
end
table.sort(fields, function(a, b)
  local ka, kb = string.sub(a, 1, 1), string.sub(b, 1, 1)
  if ka ~= kb then return ka < kb end
  return tonumber(string.sub(a, 3)) < tonumber(string.sub(b, 3))
end)

local reply = {left}
local until_ = string.format('%.0f', now + tonumber(ARGV[1]))
for _, field in ipairs(fields) do
  if h[field] then
    redis.call('HSET', KEYS[1], 'l:' .. field, until_)
    reply[#reply + 1] = field
    reply[#reply + 1] = h[field]
  else
    redis.call('HDEL', KEYS[1], 'l:' .. field) -- a lease without its entry
  end
end
return reply
