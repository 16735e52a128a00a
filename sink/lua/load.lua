-- load.lua (loadLua in scripts.go): reads rooms that the sink's state cache
-- does not hold, or holds stale, so that the sink can plan their applies
-- in Go (see Store.ApplyMerge) and write them with fast.lua. It writes
-- nothing. One call reads one room or, on a single node, several (up to
-- Config.RoomsPerScript), each as a call of its own would.
--
-- KEYS: per room, three keys: 1 members hash, 2 ranking zset (unused: the
--       sink ranks from the states; listed so that a call holds whole
--       rooms), 3 stable hash
-- ARGV (loadRoomArgs in scriptargs.go): one record per room, in the order
-- of KEYS; the script reads them into A at its top, and nothing else reads
-- ARGV:
--   parts    the number of topic-partitions whose watermarks the reply
--            carries, then their names ("topic/partition")
--
-- Reply: a list of one reply per room, in order; a room's reply is {state
-- token or "", rules version or "", seq, stable list or "", pending output
-- or "", ranking version, hysteresis state or "", the parts' watermarks
-- (-1 where none), count of member states that follow, user, packed state,
-- ...}. The pending output is the stored output when it is the stable
-- list's (pending = seq), as fast.lua replies it.
--
--! include consts.lua

-- decode reads ARGV (the layout above) into A: A[r] is room r's record,
-- its names in its array.
local function decode()
  local A = {}
  local i = 1
  for r = 1, #KEYS/3 do
    local np = tonumber(ARGV[i])
    A[r] = {parts = np, unpack(ARGV, i+1, i+np)}
    i = i + 1 + np
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
  local states = redis.call('HGETALL', km)
  reply[#reply+1] = #states/2
  for k = 1, #states do reply[#reply+1] = states[k] end
  out[r] = reply
end
return out
