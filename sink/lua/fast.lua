-- fast.lua (fastLua in scripts.go): applies rooms' shares of a batch that
-- the sink merged and scored in Go from its state cache (see stateCache in
-- cache.go): it only writes the finished member states and scores, and only
-- if the room's state token is still the one the cache holds. It is the fast
-- path of apply.lua, with the same keys, watermarks, TTLs and ranking
-- version.
--
-- One call applies one or several rooms, each as if by a call of its own
-- (one room's refusal does not stop the others): a script call costs Redis
-- about as much again as the five commands a small room's apply runs, so on
-- a single node the sink sends up to Options.RoomsPerScript rooms per call.
-- On a Redis Cluster every call holds one room (its keys share one slot).
--
-- With a merge mode, the sink also knew the room's stable hash and the
-- processor merged the room's next stable list before the apply: the script
-- then stores it as commit.lua would, under a compare-and-set on the seq,
-- the ranking version, the hysteresis state and the pending output it was
-- merged from, so a batch takes one round trip instead of two.
--
-- KEYS: per room, three keys: 1 members hash, 2 ranking zset, 3 stable
--       hash (apply.lua's; the watermarks are fields of the stable hash,
--       read with its other fields and written with them)
-- ARGV: per room, the number of its arguments and then its arguments,
--       numbered here from 1: 1 ttl ms, 2 top-n (0: no top list, the sink
--       computes it), 3 token expected, 4 new token ("": the member states are
--       unchanged), 5 bump the ranking version (0/1), 6 seq of an output
--       of the room just published ("": none; see ack.lua),
--       7 merge mode (MERGE_NONE, MERGE_MERGED: merged, nothing to store,
--       MERGE_STORE: store a new list and state, MERGE_STATE: store the
--       state only), 8 seq, 9 ranking version,
--       10 hysteresis state and 11 pending seq ("": none) merged from,
--       12 new list, 13 output record, 14 new state ("": none),
--       15 TTL refresh (TTL_ALL: every key, TTL_RANKING: the ranking only,
--       TTL_NONE: none; see Redis.ttlMode), 16 rules version (the cache
--       scored under it; a room stored under other rules takes apply.lua,
--       which re-scores it), 17 number of topic-partition
--       parts, then per part: name, last offset; then a count and that many
--       (user, packed state) pairs for HSET, a count and that many
--       (score, user) pairs for ZADD, and a count and that many users for
--       ZREM
--
-- Reply: a list of one reply per room, in order; a room's reply is
-- {-1, the stored token or ""} when the token moved on or the
-- room's rules version is not argument 16, {-1} when
-- the merged-from stable state did (nothing written, the ack neither), {-2}
-- when a part is at or below its watermark (the same; the full script
-- decides), {1} with a merge mode, else {1 if a part was applied or 0, seq,
-- stable list, pending output or "", version, hysteresis state or "", user1,
-- score1, ...} with the raw top-n best first.

-- merge modes, ARGV 7 (mergeNone, ... in scripts.go)
local MERGE_NONE, MERGE_MERGED, MERGE_STORE, MERGE_STATE = 0, 1, 2, 3 -- luacheck: ignore 211
-- TTL refresh, ARGV 15 (ttlNone, ... in scripts.go)
local TTL_NONE, TTL_RANKING, TTL_ALL = 0, 1, 2 -- luacheck: ignore 211

-- room applies the room whose keys are km, kz, ks and whose argument k is
-- ARGV[o+k], and returns its reply.
local function room(km, kz, ks, o)
  local nparts = tonumber(ARGV[o+17])
  local fields = {'seq', 'list', 'pending', 'out', 'v', 'h', 'mv', 'r'}
  for k = 0, nparts-1 do fields[9+k] = ARGV[o+18+2*k] end
  local st = redis.call('HMGET', ks, unpack(fields))
  if st[7] ~= ARGV[o+3] or st[8] ~= ARGV[o+16] then return {-1, st[7] or ''} end
  local ttl, topn, mode = ARGV[o+1], tonumber(ARGV[o+2]), tonumber(ARGV[o+7])
  local seq = tonumber(st[1] or '0')
  local acked = st[3] and st[3] == ARGV[o+6]
  if mode > MERGE_NONE then
    local pend = ''
    if st[3] and st[3] == st[1] and not acked then pend = st[3] end
    if seq ~= tonumber(ARGV[o+8]) or tonumber(st[5] or '0') ~= tonumber(ARGV[o+9]) or (st[6] or '') ~= ARGV[o+10] or pend ~= ARGV[o+11] then return {-1} end
  end
  -- the stable hash's changes, watermarks included, in one HSET and at most
  -- one HDEL at the end
  local set, del = {}, {}
  local function put(f, x) set[#set+1] = f; set[#set+1] = x end
  local i = o + 18 -- the next argument, as an index of ARGV
  for k = 0, nparts-1 do
    if tonumber(ARGV[i+2*k+1]) <= tonumber(st[9+k] or '-1') then return {-2} end
    put(ARGV[i+2*k], ARGV[i+2*k+1])
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
  each('HSET', km, 2)
  each('ZADD', kz, 2)
  each('ZREM', kz, 1)
  local v = tonumber(st[5] or '0')
  if ARGV[o+5] == '1' then v = v + 1; put('v', v) end
  if ARGV[o+4] ~= '' then put('mv', ARGV[o+4]) end
  if mode == MERGE_STORE then
    put('seq', seq+1); put('list', ARGV[o+12]); put('out', ARGV[o+13]); put('pending', seq+1)
  elseif acked then
    del[1] = 'pending'; del[2] = 'out'
  end
  if mode >= MERGE_STORE then -- MERGE_STORE or MERGE_STATE
    if ARGV[o+14] == '' then del[#del+1] = 'h' else put('h', ARGV[o+14]) end
  end
  if #del > 0 then redis.call('HDEL', ks, unpack(del)) end
  if #set > 0 then redis.call('HSET', ks, unpack(set)) end
  local applied = 0
  if nparts > 0 then applied = 1 end
  local refresh = tonumber(ARGV[o+15])
  if refresh == TTL_ALL then
    redis.call('PEXPIRE', km, ttl)
    redis.call('PEXPIRE', kz, ttl)
    redis.call('PEXPIRE', ks, ttl)
  elseif refresh == TTL_RANKING then
    redis.call('PEXPIRE', kz, ttl)
  end
  if mode > MERGE_NONE then return {1} end
  local pending = ''
  if st[3] and st[3] == st[1] and not acked then pending = st[4] end
  local reply = {applied, seq, st[2] or '', pending, v, st[6] or ''}
  if topn > 0 then
    local top = redis.call('ZREVRANGE', kz, 0, topn-1, 'WITHSCORES')
    for k = 1, #top do reply[#reply+1] = top[k] end
  end
  return reply
end

local out, o = {}, 0
for r = 0, #KEYS/3 - 1 do
  out[r+1] = room(KEYS[3*r+1], KEYS[3*r+2], KEYS[3*r+3], o+1)
  o = o + 1 + tonumber(ARGV[o+1])
end
return out
