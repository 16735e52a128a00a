-- apply.lua (applyLua in scripts.go): applies one room's share of a batch
-- atomically and returns what the stable merge needs. Every key it touches
-- carries the room's hash tag, so it runs on one Redis Cluster slot.
--
-- KEYS: 1 members hash, 2 ranking zset, 3 stable hash
-- ARGV: 1 ttl ms, 2 top-n, 3 epoch ms, 4 max time offset (ms),
--       5..10 multipliers of spotlight, screen share, audio, volume, video
--       and role in the score (0: the rules do not rank on the field),
--       11 time unit (ms), 12 rules version, 13 members cap (0: none),
--       14 force (1: apply parts at or below the watermark too; recovery),
--       15 new state token, 16 want states (1: reply with every member's
--       state, for the sink's state cache),
--       17 number of topic-partition parts, then per part:
--       name ("topic/partition"), last offset, member count,
--       then member count pairs of (user id, packed update)
--
-- Rules version: the stable hash's field r names the ranking rules the
-- room's scores were computed under. A room touched under other rules (a
-- processor configured with other --ranking or --score-epoch), or whose
-- stable hash has no r, is re-scored from its member registers first, in
-- this same atomic step: the ranking is rebuilt whole, so one sorted set
-- never holds two layouts.
--
-- Packed member states: format 2 (ranking.MemberState.AppendBinary), the
-- only one read and written; a stored state of any other format is an error.
--
-- Watermarks: the stable hash's field "topic/partition" holds the last
-- offset applied from that partition (fast.lua reads and writes it there
-- too).
--
-- A part whose last offset is at or below the stored watermark was applied
-- before (a replay or a zombie consumer) and is skipped. A part that overlaps
-- the watermark is applied whole: member states merge idempotently, so its
-- already-applied events have no second effect.
--
-- Every apply that adds, rescores or removes a ranked member bumps the
-- room's ranking version (field v of the stable hash). The stable list is
-- stored only if both its seq and this version are unchanged since they were
-- read (commit.lua), so a list merged from a raw top-N that another processor
-- has changed meanwhile is never stored.
--
-- Members cap: with a cap, a user not yet in the members hash is refused
-- while the hash holds cap members (a leave keeps the member's state, so it
-- does not free a slot; the room's keys expire when it goes idle). The count
-- and the check run inside this script, so concurrent appliers cannot
-- overshoot it. Existing members are never refused. A refused user is also
-- reported for a part skipped by its watermark when the user is still not a
-- member, so a redelivered batch reports the same refusals again.
--
-- An apply that applied a part writes the new state token (field mv of the
-- stable hash; see stateCache in cache.go), so a cached copy of the member
-- states taken before it is known to be stale. With want states, a room that
-- has members but no token yet gets one.
--
-- Reply: {applied (0/1), seq, stable list, pending output or "", version,
-- hysteresis state or "", scores of the stable list's members
-- (comma-separated, "" for a member no longer ranked), refused users
-- (comma-separated) or "", state token or "", count of state pairs that
-- follow, user, packed state, ..., user1, score1, ...} with the raw top-n best
-- first after the states (none unless want states).
-- The stable members' scores tell the hysteresis which of them left the
-- ranking and how strong the others are.

local MAXD = 4294967295
local ttl, topn, epoch, tmax = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local mP, mS, mA, mV = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local mVid, mR, unit = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local rules = ARGV[12]
local cap = tonumber(ARGV[13])
local force = ARGV[14] == '1'
local token, want = ARGV[15], ARGV[16] == '1'
local nparts = tonumber(ARGV[17])
local i = 18
local upd, users = {}, {}
local applied = 0
local refused, isRefused, skipped = {}, {}, {}

-- A state is a table: 1 audio, 2 video, 3 presence, 4 role, 5 screen
-- share, 6 spotlight, 7 volume, then the registers' times 8 audio,
-- 9 volume, 10 video, 11 role, 12 presence, 13 screen share, 14 spotlight
-- (0: never set), and 15 the newest time. Register j of the packed mask
-- has its value at V[j+1] and its time at 8+j.
local V = {1, 7, 2, 4, 3, 5, 6}
local function merge(s, u)
  for j = 1, 7 do
    local v, t = V[j], 7+j
    if u[t] > s[t] or (u[t] == s[t] and u[v] > s[v]) then s[v] = u[v]; s[t] = u[t] end
  end
  if u[15] > s[15] then s[15] = u[15] end
end
local function unpack15(b)
  if string.byte(b, 1) ~= 2 then
    error('rostrum: member state of ' .. #b .. ' bytes is not of format version 2')
  end
  if #b < 11 then error('rostrum: member state of ' .. #b .. ' bytes is short') end
  local _, vals, mask, mx = struct.unpack('<BI3BI6', b)
  local s = {vals % 2, math.floor(vals/2) % 2, math.floor(vals/16) % 4, math.floor(vals/64) % 8,
    math.floor(vals/4) % 2, math.floor(vals/8) % 2, math.floor(vals/512), 0, 0, 0, 0, 0, 0, 0, mx}
  local at = 12
  for j = 0, 6 do
    if bit.band(mask, 2^j) ~= 0 then
      if at + 3 > #b then error('rostrum: member state of ' .. #b .. ' bytes is short') end
      s[8+j] = mx - struct.unpack('<I4', b, at)
      at = at + 4
    end
  end
  if at ~= #b + 1 then error('rostrum: member state of ' .. #b .. ' bytes, mask wants ' .. (at-1)) end
  return s
end
local function pack15(s)
  local mx = s[15]
  local vals = s[1] + s[2]*2 + s[5]*4 + s[6]*8 + s[3]*16 + s[4]*64 + s[7]*512
  local mask, d = 0, {}
  for j = 0, 6 do
    local t = s[8+j]
    if t ~= 0 then
      mask = mask + 2^j
      d[#d+1] = math.min(math.max(mx - t, 0), MAXD)
    end
  end
  return struct.pack('<BI3BI6' .. string.rep('I4', #d), 2, vals, mask, mx, unpack(d))
end
-- score returns a ranked state's score, nil for a state that is not ranked
-- and false for a time outside the score layout.
local function score(s)
  local role = s[4]
  if role == 0 then role = 1 end
  if s[3] ~= 1 or role < 1 or role > 4 then return nil end
  local t = s[15] - epoch
  if t < 0 or t > tmax then return false end
  return s[6]*mP + s[5]*mS + s[1]*mA + s[7]*mV + s[2]*mVid + role*mR + math.floor(t/unit)
end

for _ = 1, nparts do
  local tp, last, n = ARGV[i], tonumber(ARGV[i+1]), tonumber(ARGV[i+2])
  i = i + 3
  local wm = tonumber(redis.call('HGET', KEYS[3], tp) or '-1')
  if force or last > wm then
    applied = 1
    for k = 0, n-1 do
      local user, u = ARGV[i+2*k], unpack15(ARGV[i+2*k+1])
      local s = upd[user]
      if s then merge(s, u) else upd[user] = u; users[#users+1] = user end
    end
    if last > wm then redis.call('HSET', KEYS[3], tp, last) end
  elseif cap > 0 then
    for k = 0, n-1 do skipped[#skipped+1] = ARGV[i+2*k] end
  end
  i = i + 2*n
end

local count = 0
if cap > 0 then count = redis.call('HLEN', KEYS[1]) end
local function refuse(user)
  if not isRefused[user] then isRefused[user] = true; refused[#refused+1] = user end
end
for _, user in ipairs(skipped) do
  if redis.call('HEXISTS', KEYS[1], user) == 0 then refuse(user) end
end

local ranked = 0
-- The rules version: re-score the room whole when it was scored under
-- other rules, or stored without a version.
local rv = redis.call('HGET', KEYS[3], 'r')
if rv ~= rules then
  local exists = redis.call('EXISTS', KEYS[1]) == 1
  local all = {}
  if exists then all = redis.call('HGETALL', KEYS[1]) end
  if #all > 0 then
    -- every score first: a time outside the layout changes nothing
    local zadd = {}
    for k = 1, #all, 2 do
      local sc = score(unpack15(all[k+1]))
      if sc == false then return redis.error_reply('ERR rostrum: time of ' .. all[k] .. ' outside the score layout') end
      if sc then zadd[#zadd+1] = string.format('%.0f', sc); zadd[#zadd+1] = all[k] end
    end
    redis.call('DEL', KEYS[2])
    for c = 1, #zadd, 1000 do
      redis.call('ZADD', KEYS[2], unpack(zadd, c, math.min(c+999, #zadd)))
    end
    redis.call('HINCRBY', KEYS[3], 'v', 1)
  end
  if exists or applied == 1 then
    redis.call('HSET', KEYS[3], 'r', rules)
    -- an apply refreshes every key's TTL below
    if applied == 0 then for k = 1, 3 do redis.call('PEXPIRE', KEYS[k], ttl) end end
  end
end
if applied == 1 then
  local CH = 500
  for c = 1, #users, CH do
    local chunk = {}
    for k = c, math.min(c+CH-1, #users) do chunk[#chunk+1] = users[k] end
    local stored = redis.call('HMGET', KEYS[1], unpack(chunk))
    local hset, zadd, zrem = {}, {}, {}
    for k, user in ipairs(chunk) do
      local s
      local admit = true
      if stored[k] then
        s = unpack15(stored[k])
      elseif cap > 0 and count >= cap then
        admit = false
        refuse(user)
      else
        s = {0,0,0,0,0,0,0,0,0,0,0,0,0,0,0}
        count = count + 1
      end
      local before = stored[k]
      local packed = before
      if admit then
        merge(s, upd[user])
        packed = pack15(s)
      end
      if packed ~= before then
        hset[#hset+1] = user; hset[#hset+1] = packed
        local sc = score(s)
        if sc == false then return redis.error_reply('ERR rostrum: time of ' .. user .. ' outside the score layout') end
        if sc then
          zadd[#zadd+1] = string.format('%.0f', sc); zadd[#zadd+1] = user
        else
          zrem[#zrem+1] = user
        end
      end
    end
    if #hset > 0 then redis.call('HSET', KEYS[1], unpack(hset)) end
    if #zadd > 0 then redis.call('ZADD', KEYS[2], unpack(zadd)); ranked = 1 end
    if #zrem > 0 then redis.call('ZREM', KEYS[2], unpack(zrem)); ranked = 1 end
  end
  if ranked == 1 then redis.call('HINCRBY', KEYS[3], 'v', 1) end
  redis.call('HSET', KEYS[3], 'mv', token)
  for k = 1, 3 do redis.call('PEXPIRE', KEYS[k], ttl) end
end

local st = redis.call('HMGET', KEYS[3], 'seq', 'list', 'pending', 'out', 'v', 'h', 'mv')
local states = {}
if want then
  if not st[7] and redis.call('HLEN', KEYS[1]) > 0 then
    redis.call('HSET', KEYS[3], 'mv', token)
    redis.call('PEXPIRE', KEYS[3], ttl)
    st[7] = token
  end
  if st[7] then states = redis.call('HGETALL', KEYS[1]) end
end
local pending = ''
if st[3] and st[3] == st[1] then pending = st[4] end
local top = redis.call('ZREVRANGE', KEYS[2], 0, topn-1, 'WITHSCORES')
local intop = {}
for k = 1, #top, 2 do intop[top[k]] = top[k+1] end
-- Shown members are mostly in the top: only the others cost a ZSCORE.
local scores = {}
if st[2] then
  for user in string.gmatch(st[2], '[^,]+') do
    scores[#scores+1] = intop[user] or redis.call('ZSCORE', KEYS[2], user) or ''
  end
end
local reply = {applied, tonumber(st[1] or '0'), st[2] or '', pending, tonumber(st[5] or '0'), st[6] or '', table.concat(scores, ','), table.concat(refused, ','), st[7] or '', #states/2}
for k = 1, #states do reply[#reply+1] = states[k] end
for k = 1, #top do reply[#reply+1] = top[k] end
return reply
