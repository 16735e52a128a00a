-- clock.lua: helpers included by recording.lua and layout.lua ("--! include
-- clock.lua"); not a script of its own.
--
-- now is Redis's clock in Unix ms (TIME), f formats a number without an
-- exponent, and expired(out) counts the entries of the room's outbox hash
-- out whose lease ("l:…" → Unix ms) has ended: records their writer died
-- before publishing (control/outbox.go).

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function f(n) return string.format('%.0f', n) end

local function expired(out)
  local n = 0
  if redis.call('EXISTS', out) == 0 then return 0 end
  local kv = redis.call('HGETALL', out)
  for i = 1, #kv, 2 do
    if string.sub(kv[i], 1, 2) == 'l:' and tonumber(kv[i + 1]) <= now then n = n + 1 end
  end
  return n
end
