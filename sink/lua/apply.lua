-- apply.lua (applyLua in scripts.go): applies one room's share of a batch
-- atomically and returns what the stable merge needs. Every key it touches
-- carries the room's hash tag, so it runs on one Redis Cluster slot.
--
-- KEYS: 1 members hash, 2 ranking zset, 3 stable hash
-- ARGV (applyArgs in scriptargs.go): the Store's head, the same for every
-- call, then the room's arguments; the script reads them into A under
-- these names at its top, and nothing else reads ARGV:
--   ttl             the room's TTL, ms
--   topN            the size of the raw top list
--   epoch           the score's epoch, Unix ms
--   spotlightMul    the score of one step of spotlight, and so on for
--                   screen share, audio, volume, video and role (0: the
--                   rules do not rank on the field)
--   screenShareMul
--   audioMul
--   volumeMul
--   videoMul
--   roleMul
--   unit            the score's time unit, ms
--   rules           the rules version
--   maxMembers      the members cap (0: none)
-- then the room's (applyRoomArgs in scriptargs.go):
--   force           apply parts at or below their watermark too (1/0;
--                   recovery)
--   token           the new state token
--   want            reply with every member's state, for the sink's state
--                   cache (1/0)
--   parts           the number of topic-partition parts, then per part:
--                   tp ("topic/partition", the field of its watermark),
--                   last offset, and its members: their number, then per
--                   member user id and packed update
--
-- Rules version: the stable hash's field r names the ranking rules the
-- room's scores were computed under. A room touched under other rules (a
-- processor configured with other --ranking or --score-epoch), or whose
-- stable hash has no r, is re-scored from its member registers first, in
-- this same atomic step: the ranking is rebuilt whole, so one sorted set
-- never holds two layouts.
--
-- Packed member states: format STATE_FORMAT (ranking.MemberState.AppendBinary),
-- the only one read and written; a stored state of any other format is an
-- error.
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

--! include consts.lua

-- decode reads ARGV (the layout above) into A. A.parts[k] is part k: its
-- fields tp and last, and in its array its members' (user, packed update)
-- pairs. (A table costs Redis more than the few values it holds, in its
-- allocation and in the collector's work: the decode makes three for the
-- usual call of one part.) The numbers the script computes with are
-- numbers.
local function decode()
  local A = {ttl = ARGV[1], topN = tonumber(ARGV[2]), epoch = tonumber(ARGV[3]), spotlightMul = tonumber(ARGV[4]),
    screenShareMul = tonumber(ARGV[5]), audioMul = tonumber(ARGV[6]), volumeMul = tonumber(ARGV[7]),
    videoMul = tonumber(ARGV[8]), roleMul = tonumber(ARGV[9]), unit = tonumber(ARGV[10]), rules = ARGV[11],
    maxMembers = tonumber(ARGV[12]), force = ARGV[13] == '1', token = ARGV[14], want = ARGV[15] == '1', parts = {}}
  local i = 17
  for k = 1, tonumber(ARGV[16]) do
    local last = i + 2 + 2*tonumber(ARGV[i+2]) -- the part's last argument
    -- unpack's values must fit in Lua's C stack: a longer part goes on
    -- by one
    local part = {tp = ARGV[i], last = tonumber(ARGV[i+1]), unpack(ARGV, i+3, math.min(last, i+3+3999))}
    for j = i+3+4000, last do part[j-i-2] = ARGV[j] end
    A.parts[k] = part
    i = last + 1
  end
  return A
end
local A = decode()

-- EMPTY stands for a list the call leaves empty, which is never written
-- (a table is worth not making: see decode)
local EMPTY = {}
local upd, users = {}, {}
local applied = 0
local refused, isRefused, skipped = EMPTY, EMPTY, EMPTY -- written only with a members cap
if A.maxMembers > 0 then refused, isRefused, skipped = {}, {}, {} end

-- A member state is a table of 15 slots: the values, slots AUDIO to
-- VOLUME; the seven registers' times (0: never set), slot TIMES + j for
-- the register of REGISTERS[j]; and the newest time, slot NEWEST. A
-- register's bit in the packed mask is its index in REGISTERS, less one.
local AUDIO, VIDEO, PRESENCE, ROLE, SCREEN, SPOTLIGHT, VOLUME = 1, 2, 3, 4, 5, 6, 7
local REGISTERS = {AUDIO, VOLUME, VIDEO, ROLE, PRESENCE, SCREEN, SPOTLIGHT}
local TIMES, NEWEST = 7, 15
local function merge(s, u)
  for j = 1, 7 do
    local v, t = REGISTERS[j], TIMES+j
    if u[t] > s[t] or (u[t] == s[t] and u[v] > s[v]) then s[v] = u[v]; s[t] = u[t] end
  end
  if u[NEWEST] > s[NEWEST] then s[NEWEST] = u[NEWEST] end
end
-- The packed values: bit 0 audio, 1 video, 2 screen share, 3 spotlight,
-- 4-5 presence, 6-8 role, 9 and up volume.
local function unpack15(b)
  if string.byte(b, 1) ~= STATE_FORMAT then
    error('rostrum: member state of ' .. #b .. ' bytes is not of format version ' .. STATE_FORMAT)
  end
  if #b < 11 then error('rostrum: member state of ' .. #b .. ' bytes is short') end
  local _, vals, mask, mx = struct.unpack('<BI3BI6', b)
  -- the slots in order, in one constructor (a state is unpacked for
  -- every member an apply touches)
  local s = {
    vals % 2, -- AUDIO
    math.floor(vals/2) % 2, -- VIDEO
    math.floor(vals/16) % 4, -- PRESENCE
    math.floor(vals/64) % 8, -- ROLE
    math.floor(vals/4) % 2, -- SCREEN
    math.floor(vals/8) % 2, -- SPOTLIGHT
    math.floor(vals/512), -- VOLUME
    0, 0, 0, 0, 0, 0, 0, -- the registers' times, below
    mx, -- NEWEST
  }
  local at = 12
  for j = 1, 7 do
    if bit.band(mask, 2^(j-1)) ~= 0 then
      if at + 3 > #b then error('rostrum: member state of ' .. #b .. ' bytes is short') end
      s[TIMES+j] = mx - struct.unpack('<I4', b, at)
      at = at + 4
    end
  end
  if at ~= #b + 1 then error('rostrum: member state of ' .. #b .. ' bytes, mask wants ' .. (at-1)) end
  return s
end
local function pack15(s)
  local mx = s[NEWEST]
  local vals = s[AUDIO] + s[VIDEO]*2 + s[SCREEN]*4 + s[SPOTLIGHT]*8 + s[PRESENCE]*16 + s[ROLE]*64 + s[VOLUME]*512
  local mask, d = 0, {}
  for j = 1, 7 do
    local t = s[TIMES+j]
    if t ~= 0 then
      mask = mask + 2^(j-1)
      d[#d+1] = math.min(math.max(mx - t, 0), MAX_TIME_DELTA)
    end
  end
  return struct.pack('<BI3BI6' .. string.rep('I4', #d), STATE_FORMAT, vals, mask, mx, unpack(d))
end
-- score returns a ranked state's score, nil for a state that is not ranked
-- and false for a time outside the score layout.
local function score(s)
  local role = s[ROLE]
  if role == 0 then role = 1 end
  if s[PRESENCE] ~= 1 or role < 1 or role > 4 then return nil end
  local t = s[NEWEST] - A.epoch
  if t < 0 or t > MAX_TIME_OFFSET then return false end
  return s[SPOTLIGHT]*A.spotlightMul + s[SCREEN]*A.screenShareMul + s[AUDIO]*A.audioMul + s[VOLUME]*A.volumeMul +
    s[VIDEO]*A.videoMul + role*A.roleMul + math.floor(t/A.unit)
end

for _, part in ipairs(A.parts) do
  local wm = tonumber(redis.call('HGET', KEYS[3], part.tp) or '-1')
  if A.force or part.last > wm then
    applied = 1
    for m = 1, #part, 2 do
      local user, u = part[m], unpack15(part[m+1])
      local s = upd[user]
      if s then merge(s, u) else upd[user] = u; users[#users+1] = user end
    end
    if part.last > wm then redis.call('HSET', KEYS[3], part.tp, part.last) end
  elseif A.maxMembers > 0 then
    for m = 1, #part, 2 do skipped[#skipped+1] = part[m] end
  end
end

local count = 0
if A.maxMembers > 0 then count = redis.call('HLEN', KEYS[1]) end
local function refuse(user)
  if not isRefused[user] then isRefused[user] = true; refused[#refused+1] = user end
end
for _, user in ipairs(skipped) do
  if redis.call('HEXISTS', KEYS[1], user) == 0 then refuse(user) end
end

local ranked = 0
-- The rules version: re-score the room whole when it was scored under
-- other rules, or stored without a version.
local rv = redis.call('HGET', KEYS[3], FIELD_RULES)
if rv ~= A.rules then
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
    redis.call('HINCRBY', KEYS[3], FIELD_VERSION, 1)
  end
  if exists or applied == 1 then
    redis.call('HSET', KEYS[3], FIELD_RULES, A.rules)
    -- an apply refreshes every key's TTL below
    if applied == 0 then for k = 1, 3 do redis.call('PEXPIRE', KEYS[k], A.ttl) end end
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
      elseif A.maxMembers > 0 and count >= A.maxMembers then
        admit = false
        refuse(user)
      else
        s = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
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
  if ranked == 1 then redis.call('HINCRBY', KEYS[3], FIELD_VERSION, 1) end
  redis.call('HSET', KEYS[3], FIELD_TOKEN, A.token)
  for k = 1, 3 do redis.call('PEXPIRE', KEYS[k], A.ttl) end
end

local seq, list, pend, out, version, hstate, token = unpack(redis.call('HMGET', KEYS[3], FIELD_SEQ, FIELD_LIST,
  FIELD_PENDING, FIELD_OUT, FIELD_VERSION, FIELD_H_STATE, FIELD_TOKEN), 1, 7)
local states = EMPTY
if A.want then
  if not token and redis.call('HLEN', KEYS[1]) > 0 then
    redis.call('HSET', KEYS[3], FIELD_TOKEN, A.token)
    redis.call('PEXPIRE', KEYS[3], A.ttl)
    token = A.token
  end
  if token then states = redis.call('HGETALL', KEYS[1]) end
end
local pending = ''
if pend and pend == seq then pending = out end
local top = redis.call('ZREVRANGE', KEYS[2], 0, A.topN-1, 'WITHSCORES')
local scores = EMPTY
if list then
  -- Shown members are mostly in the top: only the others cost a ZSCORE.
  local intop = {}
  for k = 1, #top, 2 do intop[top[k]] = top[k+1] end
  scores = {}
  for user in string.gmatch(list, '[^,]+') do
    scores[#scores+1] = intop[user] or redis.call('ZSCORE', KEYS[2], user) or ''
  end
end
local reply = {applied, tonumber(seq or '0'), list or '', pending, tonumber(version or '0'), hstate or '', table.concat(scores, ','),
  table.concat(refused, ','), token or '', #states/2}
for k = 1, #states do reply[#reply+1] = states[k] end
for k = 1, #top do reply[#reply+1] = top[k] end
return reply
