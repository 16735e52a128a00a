-- settle.lua (settleLua in scripts.go): one step of the settlement of one
-- closed period of a periodic board (Store.Settle, settle.go).
--
-- KEYS: 1 the board's watermark hash (P .. 'w', for the generation),
--       2 the settle state P .. 'st', 3 the period's zset P .. 'p:<label>:z',
--       4 its member hash P .. 'p:<label>:m', 5 the snapshot list
--       P .. 'S:<label>', 6 the snapshot's record fragments
--       P .. 'S:<label>:j', 7 its info P .. 'S:<label>:i', 8 the outbox
--       P .. 'o', 9 the settled periods P .. 'SL', 10 the removals
--       deferred while the period is copied P .. 'd'
-- ARGV: 1 generation ('' = unchecked), 2 label, 3 closed_at ms (period end
--       + grace), 4 settle-top, 5 page size, 6 expire-at ms of the
--       snapshot keys, 7 period start ms, 8 settle-retention, 9 the JSON
--       head of the record ('{"board":"…","period":"…"'), 10 scale,
--       11 floor ('' = none: the total is the sum), 12 the reached bits
--       when the score holds the state of members missing from the
--       member hash (apply.lua kind 'c'), else '', 13 spread ('1': a
--       hash-tag: period board, below; '' else), 14 with spread: when the
--       period's settle state expires (ms: the later of its keys' and its
--       snapshot's expiry)
--
-- With spread every key is the period's own (P the period's prefix, see
-- keys.go): KEYS 1 P .. 'w', 2 P .. 'st', 3 P .. 'z', 4 P .. 'm', 5
-- P .. 'S', 6 P .. 'S:j', 7 P .. 'S:i', 8 the deferred removals P .. 'd';
-- the settle state is the period's own ('frozen' is its label once it is
-- frozen), and the last step keeps the record in P .. 'S:j' instead of
-- writing the board's outbox and index, which are in the board's slot:
-- settled.lua does that (settle.go).
--
-- The settle state hash holds 'frozen' (the label of the newest frozen
-- period: labels of one board sort in time order, and apply.lua refuses
-- events of every period at or below it), and while a period is copied
-- 'busy' (its label), 'cursor' (the next rank to copy, 0-based) and
-- 'members' (its members when it was frozen).
--
-- The first call for a period freezes it (frozen = busy = label) and every
-- call copies at most one page of the ranking, from the cursor, into the
-- snapshot list ("total reached member", in rank order) and its JSON
-- fragments, so that no call blocks Redis for long whatever the size of
-- the board. The call that copies the last page writes the record into the outbox
-- (field label) and the snapshot's info ("members closed_at"), and clears
-- busy: freeze, snapshot and pending record are one exactly-once sequence
-- whoever calls it, however often. It then applies the removals apply.lua
-- deferred while the period was copied (P .. 'd'): '<member>' leaves the
-- live period, 'S <member>' the snapshot (the record keeps the ranking as
-- it was frozen).
--
-- Reply: {'reset'} when the generation differs; {'done'} when the period
-- was settled before (or an older one is frozen above it); {'busy', label}
-- when another period is being copied (settle that one first);
-- {'more', cursor}; {'settled', members}.
--
--! include score.lua

if ARGV[1] ~= '' and redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1] then return {'reset'} end
local label = ARGV[2]
local st = redis.call('HMGET', KEYS[2], 'frozen', 'busy', 'cursor', 'members')
local frozen, busy = st[1], st[2]
if busy and busy ~= label then return {'busy', busy} end
local top, pagesz, scale = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[10])
local tfloor = nil
if ARGV[11] ~= nil and ARGV[11] ~= '' then tfloor = tonumber(ARGV[11]) end
local spread = ARGV[13] == '1'
local D = KEYS[10]
if spread then D = KEYS[8] end
local cursor, members
if not busy then
  if frozen and label <= frozen then return {'done'} end
  members = redis.call('ZCARD', KEYS[3])
  cursor = 0
  redis.call('HSET', KEYS[2], 'frozen', label, 'busy', label, 'cursor', 0, 'members', members)
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
    if ARGV[12] ~= nil and ARGV[12] ~= '' then setlayout('1', ARGV[12], 1, 0, '') end
    for k = 1, #zs do
      local s = sts[k]
      if not s and ARGV[12] ~= nil and ARGV[12] ~= '' then
        local t, r = unscore(tonumber(scs[k]), tonumber(ARGV[7]))
        s = fmt(t) .. ' ' .. fmt(r)
      end
      s = s or '0 0'
      local sp = string.find(s, ' ', 1, true)
      local total, reached = string.sub(s, 1, sp - 1), string.sub(s, sp + 1)
      if tfloor ~= nil and tonumber(total) < tfloor then total = fmt(tfloor) end
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
  return {'more', cursor}
end

-- Last step: the record, the info, then the deferred removals.
local body = redis.call('GET', KEYS[6]) or ''
local record = ARGV[9] .. ',"closed_at":' .. ARGV[3] .. ',"members":' .. members .. ',"top":[' .. body .. ']}'
if spread then
  redis.call('SET', KEYS[6], record)
  redis.call('PEXPIREAT', KEYS[6], ARGV[6])
else
  redis.call('HSET', KEYS[8], label, record)
  redis.call('DEL', KEYS[6])
end
redis.call('SET', KEYS[7], members .. ' ' .. ARGV[3])
redis.call('PEXPIREAT', KEYS[5], ARGV[6])
redis.call('PEXPIREAT', KEYS[7], ARGV[6])
if not spread then
  redis.call('ZADD', KEYS[9], ARGV[7], label)
  redis.call('ZREMRANGEBYRANK', KEYS[9], 0, -tonumber(ARGV[8]) - 1)
end
redis.call('HDEL', KEYS[2], 'busy', 'cursor', 'members')
if spread then redis.call('PEXPIREAT', KEYS[2], ARGV[14]) end
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
return {'settled', members}
