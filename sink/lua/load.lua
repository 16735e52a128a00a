-- load.lua (loadLua in scripts.go): reads rooms that the sink's state cache
-- does not hold, or holds stale, so that the sink can plan their applies
-- in Go (see Store.ApplyMerge) and write them with fast.lua. It writes
-- nothing. One call reads one room or, on a single node, several (up to
-- Config.RoomsPerScript), each as a call of its own would.
--
-- A room of at most A.whole members, or one scored under other rules than
-- A.rules (the sink re-scores it whole), is read whole. A larger room is
-- read in part: the members its update names and those of its stable list,
-- with its count of members; the sink plans from that part, and the raw
-- top-N comes from the ranking (fast.lua's top).
--
-- KEYS: per room, three keys: 1 members hash, 2 ranking zset (unused: the
--       sink ranks from the states; listed so that a call holds whole
--       rooms), 3 stable hash
-- ARGV (loadArgs in scriptargs.go): the call's head, then one record per
-- room, in the order of KEYS; the script reads them into A at its top, and
-- nothing else reads ARGV:
--   whole    the largest room read whole (members)
--   rules    the rules version the sink scores under
-- and A[r], room r's record (loadRoomArgs in scriptargs.go):
--   parts    the number of topic-partitions whose watermarks the reply
--            carries, then their names ("topic/partition")
--   users    the number of users the update names, then the users (read
--            from a room read in part)
--
-- Reply: a list of one reply per room, in order; a room's reply is {state
-- token or "", rules version or "", seq, stable list or "", pending output
-- or "", ranking version, hysteresis state or "", the parts' watermarks
-- (-1 where none), the room's count of members, 1 if read in part or 0,
-- count of member states that follow, user, packed state, ...}. The
-- pending output is the stored output when it is the stable list's
-- (pending = seq), as fast.lua replies it.
--
--! include consts.lua

-- decode reads ARGV (the layout above) into A: the head by name and A[r],
-- room r's record, with the parts' names in its array and its users in
-- its field users.
local function decode()
  local A = {whole = tonumber(ARGV[1]), rules = ARGV[2]}
  local i = 3
  for r = 1, #KEYS/3 do
    local np = tonumber(ARGV[i])
    local nu = tonumber(ARGV[i+1+np])
    local users = {}
    for k = 1, nu do users[k] = ARGV[i+1+np+k] end
    A[r] = {parts = np, users = users, unpack(ARGV, i+1, i+np)}
    i = i + 2 + np + nu
  end
  return A
end
local A = decode()

local out = {}
for r, R in ipairs(A) do
  local km, ks = KEYS[3*r-2], KEYS[3*r]
  local st = redis.call('HMGET', ks, FIELD_TOKEN, FIELD_RULES, FIELD_SEQ, FIELD_LIST, FIELD_PENDING, FIELD_OUT,
    FIELD_VERSION, FIELD_H_STATE, unpack(R, 1, R.parts))
  local token, rules, seq, list, pend, sout, version, hstate = unpack(st, 1, 8)
  local pending = ''
  if pend and pend == seq then pending = sout end
  local reply = {token or '', rules or '', tonumber(seq or '0'), list or '', pending, tonumber(version or '0'),
    hstate or ''}
  for k = 1, R.parts do reply[#reply+1] = tonumber(st[8+k] or '-1') end
  local n = redis.call('HLEN', km)
  reply[#reply+1] = n
  if n <= A.whole or rules ~= A.rules then
    reply[#reply+1] = 0
    local states = redis.call('HGETALL', km)
    reply[#reply+1] = #states/2
    for k = 1, #states do reply[#reply+1] = states[k] end
  else
    -- the update's users and the stable list's, each once
    local users, seen = {}, {}
    for _, u in ipairs(R.users) do
      if not seen[u] then seen[u] = true; users[#users+1] = u end
    end
    for u in string.gmatch(list or '', '[^,]+') do
      if not seen[u] then seen[u] = true; users[#users+1] = u end
    end
    reply[#reply+1] = 1
    local at = #reply + 1
    reply[at] = 0
    for c = 1, #users, 1000 do
      local chunk = {unpack(users, c, math.min(c+999, #users))}
      local states = redis.call('HMGET', km, unpack(chunk))
      for k, u in ipairs(chunk) do
        if states[k] then reply[#reply+1] = u; reply[#reply+1] = states[k]; reply[at] = reply[at] + 1 end
      end
    end
  end
  out[r] = reply
end
return out
