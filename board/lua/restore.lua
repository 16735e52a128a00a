-- restore.lua (restoreLua in scripts.go): after Redis lost its data,
-- restores a board's settlement from the records published on
-- {env}.boards.settled (Store.RestoreSettled, restore.go), so that no
-- period is settled and published twice.
--
-- KEYS: 1 the settle state P .. 'st', 2 the settled periods P .. 'SL',
--       then per snapshot P .. 'S:<label>' and P .. 'S:<label>:i'
-- ARGV: 1 the newest settled label, 2 settle-retention, 3 snapshots, then
--       per snapshot: label, period start ms, expire-at ms, info
--       ("members closed_at"), n entries, entries ("total reached member",
--       in rank order); then optionally n labels indexed without a
--       snapshot here, per label: label, period start ms (a hash-tag:
--       period board: its snapshots are in the periods' own slots,
--       restoreperiod.lua)
--
-- The frozen mark only moves forward (a settlement that ran since keeps
-- its own); a snapshot that exists is left alone.
--
-- Reply: the number of snapshots written.

local frozen = redis.call('HGET', KEYS[1], 'frozen')
if not frozen or frozen < ARGV[1] then redis.call('HSET', KEYS[1], 'frozen', ARGV[1]) end
local i, k, written = 4, 3, 0
for _ = 1, tonumber(ARGV[3]) do
  local label, start, exp, info, n = ARGV[i], ARGV[i+1], ARGV[i+2], ARGV[i+3], tonumber(ARGV[i+4])
  i = i + 5
  if redis.call('EXISTS', KEYS[k+1]) == 0 then
    redis.call('DEL', KEYS[k])
    for a = i, i + n - 1, 1000 do
      redis.call('RPUSH', KEYS[k], unpack(ARGV, a, math.min(a + 999, i + n - 1)))
    end
    redis.call('SET', KEYS[k+1], info)
    redis.call('PEXPIREAT', KEYS[k], exp)
    redis.call('PEXPIREAT', KEYS[k+1], exp)
    redis.call('ZADD', KEYS[2], start, label)
    written = written + 1
  end
  i = i + n
  k = k + 2
end
for _ = 1, tonumber(ARGV[i] or '0') do
  redis.call('ZADD', KEYS[2], ARGV[i+2], ARGV[i+1])
  i = i + 2
end
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -tonumber(ARGV[2]) - 1)
return written
