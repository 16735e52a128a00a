-- apply.lua (applyLua in scripts.go): applies one room's share of a batch
-- atomically and returns what the stable merge needs. Every key it touches
-- carries the room's hash tag, so it runs on one Redis Cluster slot.
--
-- KEYS: 1 members hash, 2 ranking zset, 3 stable hash, 4 watermark hash
-- ARGV: 1 ttl ms, 2 top-n, 3 epoch ms, 4 max time offset,
--       5..8 multipliers of audio, volume, video, role in the score,
--       9 members cap (0: none),
--       10 force (1: apply parts at or below the watermark too; recovery),
--       11 new state token, 12 want states (1: reply with every member's
--       state, for the sink's state cache),
--       13 number of topic-partition parts, then per part:
--       name ("topic/partition"), last offset, member count,
--       then member count pairs of (user id, packed update)
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

local F = '<BBBBBHlI4I4I4I4I4'
local NONE, MAXD = 4294967295, 4294967294
local ttl, topn, epoch, tmax = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local mA, mV, mVid, mR = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local cap = tonumber(ARGV[9])
local force = ARGV[10] == '1'
local token, want = ARGV[11], ARGV[12] == '1'
local nparts = tonumber(ARGV[13])
local i = 14
local upd, users = {}, {}
local applied = 0
local refused, isRefused, skipped = {}, {}, {}

-- value index, time index pairs of the packed state (see state.go)
local P = {{1,7},{2,9},{3,11},{4,10},{6,8}}
local function merge(s, u)
  for _, p in ipairs(P) do
    local v, t = p[1], p[2]
    if u[t] > s[t] or (u[t] == s[t] and u[v] > s[v]) then s[v] = u[v]; s[t] = u[t] end
  end
  if u[12] > s[12] then s[12] = u[12] end
end
local function unpack12(b)
  -- stored: values, newest time, then each field's time as a delta below it
  if #b ~= 35 then error('rostrum: member state of ' .. #b .. ' bytes, want 35') end
  local a = {struct.unpack(F, b)}
  if a[5] ~= 1 then error('rostrum: member state format ' .. a[5] .. ', want 1') end
  local mx = a[7]
  local s = {a[1], a[2], a[3], a[4], a[5], a[6], 0, 0, 0, 0, 0, mx}
  for j = 0, 4 do
    local d = a[8+j]
    if d ~= NONE then s[7+j] = mx - d end
  end
  return s
end
local function pack12(s)
  local d = {}
  for j = 0, 4 do
    local t = s[7+j]
    if t == 0 then d[j+1] = NONE else d[j+1] = math.min(s[12] - t, MAXD) end
  end
  return struct.pack(F, s[1], s[2], s[3], s[4], 1, s[6], s[12], d[1], d[2], d[3], d[4], d[5])
end

for _ = 1, nparts do
  local tp, last, n = ARGV[i], tonumber(ARGV[i+1]), tonumber(ARGV[i+2])
  i = i + 3
  local wm = tonumber(redis.call('HGET', KEYS[4], tp) or '-1')
  if force or last > wm then
    applied = 1
    for k = 0, n-1 do
      local user, u = ARGV[i+2*k], unpack12(ARGV[i+2*k+1])
      local s = upd[user]
      if s then merge(s, u) else upd[user] = u; users[#users+1] = user end
    end
    if last > wm then redis.call('HSET', KEYS[4], tp, last) end
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
        s = unpack12(stored[k])
      elseif cap > 0 and count >= cap then
        admit = false
        refuse(user)
      else
        s = {0,0,0,0,1,0,0,0,0,0,0,0}
        count = count + 1
      end
      local before = stored[k]
      local packed = before
      if admit then
        merge(s, upd[user])
        packed = pack12(s)
      end
      if packed ~= before then
        hset[#hset+1] = user; hset[#hset+1] = packed
        local role = s[4]
        if role == 0 then role = 1 end
        if s[3] == 1 and role >= 1 and role <= 4 then
          local t = s[12] - epoch
          if t < 0 or t > tmax then return redis.error_reply('ERR rostrum: time of ' .. user .. ' outside the score layout') end
          local score = s[1]*mA + s[6]*mV + s[2]*mVid + role*mR + t
          zadd[#zadd+1] = string.format('%.0f', score); zadd[#zadd+1] = user
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
  for k = 1, 4 do redis.call('PEXPIRE', KEYS[k], ttl) end
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
