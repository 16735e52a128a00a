package sink

import "github.com/redis/go-redis/v9"

// applyLua applies one room's share of a batch atomically and returns what the
// stable merge needs. Every key it touches carries the room's hash tag, so it
// runs on one Redis Cluster slot.
//
//	KEYS: 1 members hash, 2 ranking zset, 3 stable hash, 4 watermark hash
//	ARGV: 1 ttl ms, 2 top-n, 3 epoch ms, 4 max time offset,
//	      5..8 multipliers of audio, volume, video, role in the score,
//	      9 members cap (0: none),
//	      10 force (1: apply parts at or below the watermark too; recovery),
//	      11 new state token, 12 want states (1: reply with every member's
//	      state, for the sink's state cache),
//	      13 number of topic-partition parts, then per part:
//	      name ("topic/partition"), last offset, member count,
//	      then member count pairs of (user id, packed update)
//
// A part whose last offset is at or below the stored watermark was applied
// before (a replay or a zombie consumer) and is skipped. A part that overlaps
// the watermark is applied whole: member states merge idempotently, so its
// already-applied events have no second effect.
//
// Every apply that adds, rescores or removes a ranked member bumps the
// room's ranking version (field v of the stable hash). The stable list is
// stored only if both its seq and this version are unchanged since they were
// read (commitLua), so a list merged from a raw top-N that another processor
// has changed meanwhile is never stored.
//
// Members cap: with a cap, a user not yet in the members hash is refused
// while the hash holds cap members (a leave keeps the member's state, so it
// does not free a slot; the room's keys expire when it goes idle). The count
// and the check run inside this script, so concurrent appliers cannot
// overshoot it. Existing members are never refused. A refused user is also
// reported for a part skipped by its watermark when the user is still not a
// member, so a redelivered batch reports the same refusals again.
//
// An apply that applied a part writes the new state token (field mv of the
// stable hash; see stateCache), so a cached copy of the member states taken
// before it is known to be stale. With want states, a room that has members
// but no token yet gets one.
//
// Reply: {applied (0/1), seq, stable list, pending output or "", version,
// hysteresis state or "", scores of the stable list's members
// (comma-separated, "" for a member no longer ranked), refused users
// (comma-separated) or "", state token or "", count of state pairs that
// follow, user, packed state, …, user1, score1, …} with the raw top-n best
// first after the states (none unless want states).
// The stable members' scores tell the hysteresis which of them left the
// ranking and how strong the others are.
const applyLua = `
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
`

// fastLua applies one room's share of a batch that the sink merged and
// scored in Go from its state cache (see stateCache): it only writes the
// finished member states and scores, and only if the room's state token is
// still the one the cache holds. It is the fast path of applyLua, with the
// same keys, watermarks, TTLs and ranking version.
//
// With a merge mode, the sink also knew the room's stable hash and the
// processor merged the room's next stable list before the apply: the script
// then stores it as commitLua would, under a compare-and-set on the seq,
// the ranking version, the hysteresis state and the pending output it was
// merged from, so a batch takes one round trip instead of two.
//
//	KEYS: as applyLua
//	ARGV: 1 ttl ms, 2 top-n (0: no top list, the sink computes it),
//	      3 token expected, 4 new token ("": the member states are
//	      unchanged), 5 bump the ranking version (0/1), 6 seq of an output
//	      of the room just published ("": none; see ackLua),
//	      7 merge mode (0: none, 1: merged, nothing to store, 2: store a new
//	      list and state, 3: store the state only), 8 seq, 9 ranking version,
//	      10 hysteresis state and 11 pending seq ("": none) merged from,
//	      12 new list, 13 output record, 14 new state ("": none),
//	      15 TTL refresh (2: every key, 1: the ranking only, 0: none; see
//	      stateCache), 16 number of topic-partition parts, then per part:
//	      name, last offset; then a count and that many (user, packed state) pairs for
//	      HSET, a count and that many (score, user) pairs for ZADD, and a
//	      count and that many users for ZREM
//
// Reply: {-1, the stored token or ""} when the token moved on, {-1} when
// the merged-from stable state did (nothing written, the ack neither), {-2} when a part is at or below its
// watermark (the same; the full script decides), {1} with a merge mode,
// else {1 if a part was applied or 0, seq, stable list, pending output or
// "", version, hysteresis state or "", user1, score1, …} with the raw top-n
// best first.
const fastLua = `
local st = redis.call('HMGET', KEYS[3], 'seq', 'list', 'pending', 'out', 'v', 'h', 'mv')
if st[7] ~= ARGV[3] then return {-1, st[7] or ''} end
local ttl, topn, mode = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[7])
local seq = tonumber(st[1] or '0')
local acked = st[3] and st[3] == ARGV[6]
if mode > 0 then
  local pend = ''
  if st[3] and st[3] == st[1] and not acked then pend = st[3] end
  if seq ~= tonumber(ARGV[8]) or tonumber(st[5] or '0') ~= tonumber(ARGV[9]) or (st[6] or '') ~= ARGV[10] or pend ~= ARGV[11] then return {-1} end
end
local nparts = tonumber(ARGV[16])
local i = 17
if nparts > 0 then
  local names, set = {}, {}
  for k = 0, nparts-1 do names[k+1] = ARGV[i+2*k] end
  local wm = redis.call('HMGET', KEYS[4], unpack(names))
  for k = 0, nparts-1 do
    if tonumber(ARGV[i+2*k+1]) <= tonumber(wm[k+1] or '-1') then return {-2} end
    set[#set+1] = names[k+1]; set[#set+1] = ARGV[i+2*k+1]
  end
  redis.call('HSET', KEYS[4], unpack(set))
end
i = i + 2*nparts
-- runs cmd over the next n groups of width w of ARGV, in chunks that stay
-- well inside Lua's stack
local function each(cmd, key, w)
  local n = tonumber(ARGV[i])
  i = i + 1
  local CH = 1000 * w
  for a = i, i + n*w - 1, CH do
    redis.call(cmd, key, unpack(ARGV, a, math.min(a + CH - 1, i + n*w - 1)))
  end
  i = i + n*w
end
each('HSET', KEYS[1], 2)
each('ZADD', KEYS[2], 2)
each('ZREM', KEYS[2], 1)
-- the stable hash's changes, in one HSET and at most one HDEL
local v = tonumber(st[5] or '0')
local set, del = {}, {}
local function put(f, x) set[#set+1] = f; set[#set+1] = x end
if ARGV[5] == '1' then v = v + 1; put('v', v) end
if ARGV[4] ~= '' then put('mv', ARGV[4]) end
if mode == 2 then
  put('seq', seq+1); put('list', ARGV[12]); put('out', ARGV[13]); put('pending', seq+1)
elseif acked then
  del[1] = 'pending'; del[2] = 'out'
end
if mode >= 2 then
  if ARGV[14] == '' then del[#del+1] = 'h' else put('h', ARGV[14]) end
end
if #del > 0 then redis.call('HDEL', KEYS[3], unpack(del)) end
if #set > 0 then redis.call('HSET', KEYS[3], unpack(set)) end
local applied = 0
if nparts > 0 then applied = 1 end
if ARGV[15] == '2' then
  for k = 1, 4 do redis.call('PEXPIRE', KEYS[k], ttl) end
elseif ARGV[15] == '1' then
  redis.call('PEXPIRE', KEYS[2], ttl)
end
if mode > 0 then return {1} end
local pending = ''
if st[3] and st[3] == st[1] and not acked then pending = st[4] end
local reply = {applied, seq, st[2] or '', pending, v, st[6] or ''}
if topn > 0 then
  local top = redis.call('ZREVRANGE', KEYS[2], 0, topn-1, 'WITHSCORES')
  for k = 1, #top do reply[#reply+1] = top[k] end
end
return reply
`

// commitLua stores a room's new stable list and hysteresis state if
// neither the stable list, nor the ranking, nor the state changed since they
// were read (compare-and-set on seq, the ranking version and the state), and
// marks the output as pending until the publisher acknowledges it. With
// ARGV[8] = 0 it stores the state alone: the list did not change, so there
// is no new seq and no output (a challenger began to wait, say).
//
//	KEYS: 1 stable hash
//	ARGV: 1 seq read, 2 version read, 3 new list, 4 output record, 5 ttl ms,
//	      6 state read, 7 new state ("" for none), 8 new list (1) or state only (0)
//
// Reply: 1 stored (with a new list, the new seq is ARGV[1]+1), 0 something
// moved on meanwhile.
const commitLua = `
local st = redis.call('HMGET', KEYS[1], 'seq', 'v', 'h')
local seq = tonumber(st[1] or '0')
if seq ~= tonumber(ARGV[1]) or tonumber(st[2] or '0') ~= tonumber(ARGV[2]) or (st[3] or '') ~= ARGV[6] then return 0 end
if ARGV[8] == '1' then
  redis.call('HSET', KEYS[1], 'seq', seq+1, 'list', ARGV[3], 'out', ARGV[4], 'pending', seq+1)
end
if ARGV[7] == '' then redis.call('HDEL', KEYS[1], 'h') else redis.call('HSET', KEYS[1], 'h', ARGV[7]) end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
`

// ackLua clears a room's pending mark, and drops the stored copy of the
// output, once the output with that seq has been published: the copy exists
// only to republish after a crash (about 20 bytes per ranked member that
// idle rooms would otherwise keep). A newer pending output stays pending.
//
//	KEYS: 1 stable hash
//	ARGV: 1 published seq
const ackLua = `
if redis.call('HGET', KEYS[1], 'pending') == ARGV[1] then redis.call('HDEL', KEYS[1], 'pending', 'out') end
return 1
`

var (
	applyScript  = redis.NewScript(applyLua)
	fastScript   = redis.NewScript(fastLua)
	commitScript = redis.NewScript(commitLua)
	ackScript    = redis.NewScript(ackLua)
)
