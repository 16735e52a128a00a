-- recording.lua: one room's recording state machine, one atomic step on the
-- room's slot. Starts, stops and reads of a room are serialised here: the
-- state change, its fencing token, its outbox entry and the answer kept for
-- its Idempotency-Key are written together or not at all.
--
-- KEYS: 1 seq   hash, no TTL; field token: the room's last fencing token
--       2 rec   hash: the current (or last) recording: state ("recording" |
--               "idle"), id, token, by, at, params, sby, sat
--       3 hist  list: the answers of the last finished recordings, newest first
--       4 out   hash, no TTL: the outbox; "c:<token>" → command record,
--               "l:c:<token>" → Unix ms at which its writer's lease ends
--       5 idem  string: "<http status> <body>" kept for an Idempotency-Key
-- ARGV: 1 op        1 start, 2 stop, 3 read
--       2 room      the room id as a JSON string
--       3 by        the user id as a JSON string (start, stop)
--       4 id        start: the new recording id; stop: the id the caller
--                   names ("": whichever is recording)
--       5 params    start: a JSON object (text)
--       6 lease     ms a new outbox entry stays its writer's to publish
--       7 idem ttl  ms the answer is kept under KEYS[5]; 0: no key given
--       8 room ttl  ms an idle room's recording keys live
--       9 history   finished recordings kept in KEYS[3]
-- Reply: {code, answer, field, record, expired, history...}
--       code     1 won (start 201, stop 200); 2 conflict (409); 3 replay
--                (answer is the "<status> <body>" kept earlier); 4 read (200)
--       answer   the JSON body: the state after the step
--       field    the outbox field of the new command ("" unless won)
--       record   the command record ("" unless won)
--       expired  outbox entries whose lease has ended (their writer died):
--                the caller claims and publishes them
--       history  read only: the finished recordings' answers, newest first
--
-- The fencing token is max(last + 1, server time in ms): it grows by at
-- least one per change, and a primary that lost the last changes in a
-- failover still hands out tokens above them once its clock has passed them.

local OP_START, OP_STOP, OP_READ = '1', '2', '3'
local WON, CONFLICT, REPLAY, READ = 1, 2, 3, 4

--! include clock.lua

local function load()
  local kv = redis.call('HGETALL', KEYS[2])
  local r = {}
  for i = 1, #kv, 2 do r[kv[i]] = kv[i + 1] end
  return r
end

-- answer renders r as the API's state object; reason, when given, comes
-- first as "error".
local function answer(r, reason)
  local s = '{'
  if reason then s = s .. '"error":"' .. reason .. '",' end
  if not r.state then return s .. '"state":"idle"}' end
  s = s .. '"state":"' .. r.state .. '","recording_id":"' .. r.id .. '","token":' .. r.token ..
    ',"started_by":' .. r.by .. ',"started_at":' .. r.at .. ',"params":' .. r.params
  if r.state == 'idle' then
    s = s .. ',"stopped_by":' .. r.sby .. ',"stopped_at":' .. r.sat ..
      ',"duration_ms":' .. f(tonumber(r.sat) - tonumber(r.at))
  end
  return s .. '}'
end

local op = ARGV[1]
if op == OP_READ then
  local reply = {READ, answer(load()), '', '', expired(KEYS[4])}
  for _, h in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do reply[#reply + 1] = h end
  return reply
end

local keep = ARGV[7] ~= '0'
if keep then
  local prev = redis.call('GET', KEYS[5])
  if prev then return {REPLAY, prev, '', '', expired(KEYS[4])} end
end

local function done(code, status, body, field, record)
  if keep then redis.call('SET', KEYS[5], status .. ' ' .. body, 'PX', ARGV[7]) end
  return {code, body, field, record, expired(KEYS[4])}
end

local r = load()
if op == OP_START and r.state == 'recording' then
  return done(CONFLICT, '409', answer(r, 'already recording'), '', '')
end
if op == OP_STOP then
  if r.state ~= 'recording' then
    return done(CONFLICT, '409', answer(r, 'not recording'), '', '')
  end
  if ARGV[4] ~= '' and ARGV[4] ~= r.id then
    return done(CONFLICT, '409', answer(r, 'another recording is running'), '', '')
  end
end

local last = tonumber(redis.call('HGET', KEYS[1], 'token') or '0')
local token = f(math.max(last + 1, now))
redis.call('HSET', KEYS[1], 'token', token)

local action, status
if op == OP_START then
  action, status = 'start', '201'
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[2], 'state', 'recording', 'id', ARGV[4], 'token', token,
    'by', ARGV[3], 'at', f(now), 'params', ARGV[5])
  redis.call('PERSIST', KEYS[2]) -- a running recording never expires
else
  action, status = 'stop', '200'
  redis.call('HSET', KEYS[2], 'state', 'idle', 'token', token, 'sby', ARGV[3], 'sat', f(now))
  redis.call('PEXPIRE', KEYS[2], ARGV[8])
end
r = load()
local body = answer(r)
if op == OP_STOP then
  redis.call('LPUSH', KEYS[3], body)
  redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[9]) - 1)
  redis.call('PEXPIRE', KEYS[3], ARGV[8])
end

local record = '{"room_id":' .. ARGV[2] .. ',"action":"' .. action .. '","recording_id":"' .. r.id ..
  '","token":' .. token .. ',"by":' .. ARGV[3] .. ',"at":' .. f(now) .. ',"params":' .. r.params .. '}'
local field = 'c:' .. token
redis.call('HSET', KEYS[4], field, record, 'l:' .. field, f(now + tonumber(ARGV[6])))
return done(WON, status, body, field, record)
