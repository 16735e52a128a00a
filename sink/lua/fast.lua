-- fast.lua (fastLua in scripts.go): applies rooms' shares of a batch that
-- the sink merged and scored in Go (see roomModel in room.go) from its
-- state cache or from what load.lua read: it only writes the finished
-- member states and scores, and only if the room's state token is still the
-- one the sink planned from (see stateCache in cache.go) and no part is at
-- or below its watermark. It is the only script that writes member states.
--
-- One call applies one or several rooms, each as if by a call of its own
-- (one room's refusal does not stop the others): a script call costs Redis
-- about as much again as the five commands a small room's apply runs, so on
-- a single node the sink sends up to Config.RoomsPerScript rooms per call.
-- On a Redis Cluster every call holds one room (its keys share one slot).
-- What is the same for every room of a call is sent once, in the call's
-- head; each room's record carries only what is its own.
--
-- With a merge mode, the sink also knew the room's stable hash and the
-- processor merged the room's next stable list before the apply: the script
-- then stores it as commit.lua would, under a compare-and-set on the seq,
-- the ranking version and the hysteresis state it was merged from, and on
-- there being no pending output (but the one the record acks), so a batch
-- takes one round trip instead of two.
--
-- KEYS: per room, three keys: 1 members hash, 2 ranking zset, 3 stable
--       hash (apply.lua's; the watermarks are fields of the stable hash,
--       read with its other fields and written with them)
-- ARGV (fastArgs in scriptargs.go): the call's head, then one record per
-- room in the order of KEYS; the script reads them into A under these
-- names at its top, and nothing else reads ARGV:
--   ttl      the rooms' TTL, ms
--   topN     the size of the raw top list a record with top asks for
--   rules    the rules version the sink scored under; a room stored under
--            other rules is refused unless its record rebuilds its ranking
--   force    apply parts at or below their watermark too, raising only
--            the watermarks below a part (1/0; Store.Rebuild)
-- and A[r], room r's record (fastRoomArgs in scriptargs.go):
--   expect   the state token expected ('': the room has none)
--   next     the new token ('': the member states are unchanged)
--   ranking  RANKING_SAME, RANKING_CHANGED (bump the ranking version) or
--            RANKING_REBUILT (the room was scored under other rules: its
--            ranking is deleted and made again from the record's members,
--            which are all of the room's, the rules version written and the
--            ranking version bumped)
--   top      reply with the raw top-n (1/0; 0: the sink ranks it)
--   ack      the seq of an output of the room just published ('': none;
--            see ack.lua)
--   refresh  TTL_ALL: refresh every key's TTL, TTL_RANKING: the
--            ranking's only, TTL_NONE: none (see Store.ttlMode)
--   merge    MERGE_NONE, MERGE_MERGED (merged, nothing to store),
--            MERGE_STORE (store a new list, its output and the state) or
--            MERGE_STATE (store the state only)
--   seq      the seq merged from; seq, version and hstate are sent with
--            every merge mode but MERGE_NONE
--   version  the ranking version merged from
--   hstate   the hysteresis state merged from ('': none)
--   list     the new stable list; list and out are sent with MERGE_STORE
--            only
--   out      its output record
--   state    the new hysteresis state ('': none); sent with MERGE_STORE
--            and MERGE_STATE
--   parts    the number of topic-partition parts
--   members  the number of members whose state changes
--   ranked   how many of them are ranked
-- and then the record's lists: the parts' tp ("topic/partition", the field
-- of its watermark), their last offsets, the members' (user, packed state)
-- pairs, the ranked members' (score, user) pairs and the other members'
-- users (ZREM).
--
-- Reply: a list of one reply per room, in order; a room's reply is
-- {FAST_MOVED, the stored token or ""} when the token moved on or the
-- room's rules version is not A.rules (and the record writes members but
-- does not rebuild the ranking),
-- {FAST_MOVED} when the merged-from stable state did (nothing written, the
-- ack neither), {FAST_BEHIND} when a part is at or below its watermark (the
-- same; the sink reads the room and plans again),
-- {1} with a merge mode, else {1 if a part was applied or 0, seq, stable
-- list, pending output or "", version, hysteresis state or "", user1,
-- score1, ...} with the raw top-n best first.
--
--! include consts.lua

-- decode reads ARGV (the layout above) into A: the head by name and, in
-- A's array, the records. A[r] is room r's, one table made by one
-- constructor: its fields by name, and its lists in its array as the
-- commands take them: R[1 .. R.parts] the parts' tps, the next R.parts
-- their last offsets, then R.members (user, packed state) pairs, HSET's
-- arguments, R.ranked (score, user) pairs, ZADD's, and the other members'
-- users, ZREM's. (A table per list, or one that grows, costs Redis more
-- than the arguments the head saves.) The numbers the script computes with
-- are numbers; a last offset stays the text it is written as.
local function decode()
  local A = {ttl = ARGV[1], topN = tonumber(ARGV[2]), rules = ARGV[3], force = ARGV[4] == '1'}
  local i = 5
  for r = 1, #KEYS/3 do
    local merge = ARGV[i+6]
    local o = i + 7 -- the next argument
    local seq, version, hstate, list, out, state
    if merge ~= MERGE_NONE then
      seq, version, hstate = tonumber(ARGV[o]), tonumber(ARGV[o+1]), ARGV[o+2]
      o = o + 3
    end
    if merge == MERGE_STORE then
      list, out = ARGV[o], ARGV[o+1]
      o = o + 2
    end
    if merge == MERGE_STORE or merge == MERGE_STATE then
      state = ARGV[o]
      o = o + 1
    end
    local np, n, z = tonumber(ARGV[o]), tonumber(ARGV[o+1]), tonumber(ARGV[o+2])
    local first, last = o + 3, o + 2 + 2*np + n + z + 2*n
    -- unpack's values must fit in Lua's C stack: a longer list goes on by
    -- one
    local R = {expect = ARGV[i], next = ARGV[i+1], ranking = ARGV[i+2], top = ARGV[i+3] == '1', ack = ARGV[i+4],
      refresh = ARGV[i+5], merge = merge, seq = seq, version = version, hstate = hstate, list = list,
      out = out, state = state, parts = np, members = n, ranked = z, unpack(ARGV, first, math.min(last, first + 3999))}
    for k = first + 4000, last do R[k-first+1] = ARGV[k] end
    A[r] = R
    i = last + 1
  end
  return A
end
local A = decode()

-- call runs cmd on key with the arguments R[a .. b], in chunks of whole
-- groups of w that stay well inside Lua's stack; not at all when b < a.
local function call(cmd, key, R, a, b, w)
  local CH = 1000 * w
  for c = a, b, CH do
    redis.call(cmd, key, unpack(R, c, math.min(c + CH - 1, b)))
  end
end

-- set holds the arguments of a room's HSET of its stable hash, set[1 ..
-- ns]: one table for the call, which starts with room for the usual ones
-- (a table that grows is rehashed at every power of two).
local set = {nil, nil, nil, nil, nil, nil, nil, nil}
-- MERGED is the reply of every room applied with a merge mode.
local MERGED = {1}

-- Each room in turn, in the script's own body rather than a function: a
-- function would hold the constants of consts.lua as upvalues, which Redis
-- makes anew for every call. A refused room's reply leaves the room's
-- block (repeat … until true) with break.
local out = {}
for r, R in ipairs(A) do
  local km, kz, ks = KEYS[3*r-2], KEYS[3*r-1], KEYS[3*r]
  repeat
    local np, merge = R.parts, R.merge
    local st = redis.call('HMGET', ks, FIELD_SEQ, FIELD_LIST, FIELD_PENDING, FIELD_OUT, FIELD_VERSION, FIELD_H_STATE,
      FIELD_TOKEN, FIELD_RULES, unpack(R, 1, np))
    -- the stored fields (false where absent); the watermarks follow in st
    local sseq, slist, spending, sout, sversion, sstate, stoken, srules = unpack(st, 1, 8)
    -- the rules matter to a record that writes scores, and one that
    -- rebuilds the ranking writes them
    local rules = srules == A.rules or R.members == 0 or R.ranking == RANKING_REBUILT
    if (stoken or '') ~= R.expect or not rules then out[r] = {FAST_MOVED, stoken or ''}; break end
    local seq = tonumber(sseq or '0')
    local acked = spending and spending == R.ack
    -- an output of the stored list awaits its ack, and this record does
    -- not carry it
    local awaiting = spending and spending == sseq and not acked
    if merge ~= MERGE_NONE and (seq ~= R.seq or tonumber(sversion or '0') ~= R.version or (sstate or '') ~= R.hstate or awaiting) then
      out[r] = {FAST_MOVED}
      break
    end
    -- the stable hash's changes, watermarks included, in one HSET (set[1 ..
    -- ns]) and at most one HDEL at the end
    local ns, behind = 0, false
    for k = 1, np do
      if tonumber(R[np+k]) > tonumber(st[8+k] or '-1') then
        set[ns+1], set[ns+2], ns = R[k], R[np+k], ns + 2
      elseif not A.force then
        behind = true
      end
    end
    if behind then out[r] = {FAST_BEHIND}; break end
    local m, z = 2*np + 1, 2*np + 2*R.members + 1 -- where the member pairs and the ranked pairs start
    local u = z + 2*R.ranked -- and the unranked users
    call('HSET', km, R, m, z - 1, 2)
    if R.ranking == RANKING_REBUILT then
      redis.call('DEL', kz)
      set[ns+1], set[ns+2], ns = FIELD_RULES, A.rules, ns + 2
    end
    call('ZADD', kz, R, z, u - 1, 2)
    call('ZREM', kz, R, u, #R, 1)
    local v = tonumber(sversion or '0')
    if R.ranking ~= RANKING_SAME then
      v = v + 1
      set[ns+1], set[ns+2], ns = FIELD_VERSION, v, ns + 2
    end
    if R.next ~= '' then set[ns+1], set[ns+2], ns = FIELD_TOKEN, R.next, ns + 2 end
    local del
    if merge == MERGE_STORE then
      set[ns+1], set[ns+2], set[ns+3], set[ns+4] = FIELD_SEQ, seq+1, FIELD_LIST, R.list
      set[ns+5], set[ns+6], set[ns+7], set[ns+8], ns = FIELD_OUT, R.out, FIELD_PENDING, seq+1, ns + 8
    elseif acked then
      del = {FIELD_PENDING, FIELD_OUT}
    end
    if merge == MERGE_STORE or merge == MERGE_STATE then
      if R.state ~= '' then
        set[ns+1], set[ns+2], ns = FIELD_H_STATE, R.state, ns + 2
      elseif del then
        del[3] = FIELD_H_STATE
      else
        del = {FIELD_H_STATE}
      end
    end
    if del then redis.call('HDEL', ks, unpack(del)) end
    if ns > 0 then redis.call('HSET', ks, unpack(set, 1, ns)) end
    if R.refresh == TTL_ALL then
      redis.call('PEXPIRE', km, A.ttl)
      redis.call('PEXPIRE', kz, A.ttl)
      redis.call('PEXPIRE', ks, A.ttl)
    elseif R.refresh == TTL_RANKING then
      redis.call('PEXPIRE', kz, A.ttl)
    end
    if merge ~= MERGE_NONE then out[r] = MERGED; break end
    local applied, pending = 0, ''
    if np > 0 then applied = 1 end
    if awaiting then pending = sout end
    local reply = {applied, seq, slist or '', pending, v, sstate or ''}
    if R.top then
      local top = redis.call('ZREVRANGE', kz, 0, A.topN-1, 'WITHSCORES')
      for k = 1, #top do reply[#reply+1] = top[k] end
    end
    out[r] = reply
  until true
end
return out
