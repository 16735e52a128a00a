-- settle.lua (settleLua in scripts.go): one step of the settlement of one
-- closed period of a periodic board (Store.Settle, settle.go).
--
-- Every key is the period's own (P the period's prefix, see keys.go):
-- KEYS: 1 its watermark hash P .. 'w' (for the generation), 2 its settle
--       state P .. 'st', 3 its zset P .. 'z', 4 its member hash P .. 'm',
--       5 the snapshot list P .. 'S', 6 the snapshot's record fragments,
--       then the record, P .. 'S:j', 7 its info P .. 'S:i', 8 the removals
--       deferred while the period is copied P .. 'd'
-- ARGV (settleArgs in scriptargs.go), in order; the script reads
-- them into A under these names at its top, and nothing else reads ARGV:
--   gen          the generation adopted ('' = unchecked)
--   label        the period's label
--   closedAt     the period's end + grace, ms
--   top          settle-top
--   page         the members copied per call
--   expire       the expire-at ms of the snapshot keys
--   start        the period's start, ms
--   head         the JSON head of the record ('{"board":"…","period":"…"')
--   scale        the board's scale
--   floor        the floor ('' = none: the total is the sum)
--   reachedBits  the reached bits when the score holds the state of
--                members missing from the member hash (apply.lua's
--                KIND_COMPACT), else ''
--   stateExpire  when the period's settle state expires (ms: the later of
--                its keys' and its snapshot's expiry)
--
-- The settle state hash holds 'frozen' (the period's label once it is
-- frozen: apply.lua refuses its events from then on), and while the period
-- is copied 'busy' (its label), 'cursor' (the next rank to copy, 0-based)
-- and 'members' (its members when it was frozen). The last step keeps the
-- record in P .. 'S:j': the board's outbox and index of settled periods
-- are in the board's slot, and settled.lua writes them (settle.go).
--
-- The first call for a period freezes it (frozen = busy = label) and every
-- call copies at most one page of the ranking, from the cursor, into the
-- snapshot list ("total reached member", in rank order) and its JSON
-- fragments, so that no call blocks Redis for long whatever the size of
-- the board. The call after the last page writes the record and the
-- snapshot's info ("members closed_at"), and clears busy: freeze, snapshot
-- and pending record are one exactly-once sequence whoever calls it,
-- however often. It then applies the removals apply.lua
-- deferred while the period was copied (P .. 'd'): '<member>' leaves the
-- live period, 'S <member>' the snapshot (the record keeps the ranking as
-- it was frozen).
--
-- Reply: {REPLY_RESET} when the generation differs; {REPLY_DONE} when the
-- period was settled before; {REPLY_MORE, cursor}; {REPLY_SETTLED,
-- members}.
--
--! include consts.lua
--! include score.lua

local A = {gen = ARGV[1], label = ARGV[2], closedAt = ARGV[3], top = tonumber(ARGV[4]), page = tonumber(ARGV[5]),
  expire = ARGV[6], start = tonumber(ARGV[7]), head = ARGV[8], scale = tonumber(ARGV[9]), floor = ARGV[10],
  reachedBits = ARGV[11], stateExpire = ARGV[12]}

if A.gen ~= '' and redis.call('HGET', KEYS[1], FIELD_GEN) ~= A.gen then return {REPLY_RESET} end
local label = A.label
local st = redis.call('HMGET', KEYS[2], FIELD_FROZEN, 'busy', 'cursor', 'members')
local frozen, busy = st[1], st[2]
local top, pagesz, scale = A.top, A.page, A.scale
local minTotal = nil -- the floor: a total below it is recorded at it
if A.floor ~= nil and A.floor ~= '' then minTotal = tonumber(A.floor) end
local D = KEYS[8]
local cursor, members
if not busy then
  if frozen and label <= frozen then return {REPLY_DONE} end
  members = redis.call('ZCARD', KEYS[3])
  cursor = 0
  redis.call('HSET', KEYS[2], FIELD_FROZEN, label, 'busy', label, 'cursor', 0, 'members', members)
  redis.call('DEL', KEYS[5], KEYS[6])
else
  cursor, members = tonumber(st[3]), tonumber(st[4])
end

-- dec writes an integer total of a board of scale s as exact decimal text.
local function dec(v)
  if scale == 1 then return fmt(v) end
  local neg = v < 0
  if neg then v = -v end
  local q, r = math.floor(v / scale), v % scale
  local s = fmt(q)
  if r ~= 0 then
    local digits = string.len(fmt(scale)) - 1
    local f = string.format('%0' .. digits .. 'd', r)
    f = string.gsub(f, '0+$', '')
    s = s .. '.' .. f
  end
  if neg then s = '-' .. s end
  return s
end

local last = math.min(top, members) - 1
if cursor <= last then
  local from, hi = cursor, math.min(cursor + pagesz - 1, last)
  local zs, scs = redis.call('ZREVRANGE', KEYS[3], from, hi, 'WITHSCORES'), {}
  for k = 1, #zs / 2 do scs[k] = zs[2*k]; zs[k] = zs[2*k-1] end
  for k = #zs, #scs + 1, -1 do zs[k] = nil end
  if #zs > 0 then
    local sts = redis.call('HMGET', KEYS[4], unpack(zs))
    local entries, frags = {}, {}
    if A.reachedBits ~= nil and A.reachedBits ~= '' then setlayout('1', A.reachedBits, 1, 0, '') end
    for k = 1, #zs do
      local s = sts[k]
      if not s and A.reachedBits ~= nil and A.reachedBits ~= '' then
        local t, r = unscore(tonumber(scs[k]), A.start)
        s = fmt(t) .. ' ' .. fmt(r)
      end
      s = s or '0 0'
      local sp = string.find(s, ' ', 1, true)
      local total, reached = string.sub(s, 1, sp - 1), string.sub(s, sp + 1)
      if minTotal ~= nil and tonumber(total) < minTotal then total = fmt(minTotal) end
      entries[k] = total .. ' ' .. reached .. ' ' .. zs[k]
      local sep = ','
      if cursor + k == 1 then sep = '' end
      frags[k] = sep .. '{"member":' .. cjson.encode(zs[k]) .. ',"rank":' .. (cursor + k) ..
        ',"total":' .. dec(tonumber(total)) .. ',"reached_at":' .. reached .. '}'
    end
    redis.call('RPUSH', KEYS[5], unpack(entries))
    redis.call('APPEND', KEYS[6], table.concat(frags))
  end
  cursor = hi + 1
  if #zs < hi - from + 1 then cursor = last + 1 end -- the zset shrank (its keys expired): nothing more to copy
  -- The record is written by a call of its own, so that no call both
  -- copies a page and assembles a record of up to settle-top members.
  redis.call('HSET', KEYS[2], 'cursor', cursor)
  return {REPLY_MORE, cursor}
end

-- Last step: the record, the info, then the deferred removals.
local body = redis.call('GET', KEYS[6]) or ''
local record = A.head .. ',"closed_at":' .. A.closedAt .. ',"members":' .. members .. ',"top":[' .. body .. ']}'
redis.call('SET', KEYS[6], record)
redis.call('PEXPIREAT', KEYS[6], A.expire)
redis.call('SET', KEYS[7], members .. ' ' .. A.closedAt)
redis.call('PEXPIREAT', KEYS[5], A.expire)
redis.call('PEXPIREAT', KEYS[7], A.expire)
redis.call('HDEL', KEYS[2], 'busy', 'cursor', 'members')
redis.call('PEXPIREAT', KEYS[2], A.stateExpire)
local d = redis.call('SMEMBERS', D)
for _, m in ipairs(d) do
  if string.sub(m, 1, 2) == 'S ' then
    local tail = ' ' .. string.sub(m, 3)
    for _, e in ipairs(redis.call('LRANGE', KEYS[5], 0, -1)) do
      if string.sub(e, -#tail) == tail then redis.call('LREM', KEYS[5], 1, e); break end
    end
  else
    redis.call('ZREM', KEYS[3], m)
    redis.call('HDEL', KEYS[4], m)
  end
end
if #d > 0 then redis.call('DEL', D) end
return {REPLY_SETTLED, members}
