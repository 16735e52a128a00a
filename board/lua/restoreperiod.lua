-- restoreperiod.lua (restorePeriodLua in scripts.go): after Redis lost its
-- data, restores one settled period of a periodic board in the period's
-- own slot (Store.RestoreSettled, restore.go); restore.lua
-- restores the board's frozen mark and index.
--
-- KEYS: 1 the period's settle state P .. 'st', 2 its snapshot P .. 'S',
--       3 the snapshot's info P .. 'S:i' (P the period's prefix)
-- ARGV (restorePeriodArgs in scriptargs.go), in order; the script reads
-- them into A under these names at its top, and nothing else reads ARGV:
--   label        the period's label
--   snapExpire   the expire-at ms of the snapshot
--   stateExpire  the expire-at ms of the settle state
--   info         the snapshot's info ("members closed_at")
--   entries      to the end (no count): the snapshot's entries ("total
--                reached member", in rank order)
--
-- The period is marked frozen (apply.lua finds its events late); a
-- snapshot that exists is left alone.
--
-- Reply: 1 when the snapshot was written, else 0.
--
--! include consts.lua

-- decode reads ARGV (the layout above) into A.
local function decode()
  local A = {label = ARGV[1], snapExpire = ARGV[2], stateExpire = ARGV[3], info = ARGV[4], entries = {}}
  for i = 5, #ARGV do A.entries[i - 4] = ARGV[i] end
  return A
end
local A = decode()

redis.call('HSET', KEYS[1], FIELD_FROZEN, A.label)
redis.call('PEXPIREAT', KEYS[1], A.stateExpire)
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
redis.call('DEL', KEYS[2])
local entries = A.entries
for a = 1, #entries, 1000 do
  redis.call('RPUSH', KEYS[2], unpack(entries, a, math.min(a + 999, #entries)))
end
redis.call('SET', KEYS[3], A.info)
redis.call('PEXPIREAT', KEYS[2], A.snapExpire)
redis.call('PEXPIREAT', KEYS[3], A.snapExpire)
return 1
