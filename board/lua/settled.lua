-- settled.lua (settledLua in scripts.go): the board's step of the
-- settlement of one period of a periodic board (settle.go), after
-- settle.lua copied the period in the period's own slot.
--
-- KEYS: 1 the board's watermark hash P .. 'w' (for the generation), 2 its
--       settle state P .. 'st', 3 its outbox P .. 'o', 4 its settled
--       periods P .. 'SL'
-- ARGV (settledArgs in scriptargs.go), in order; the script reads
-- them into A under these names at its top, and nothing else reads ARGV:
--   gen        the generation adopted ('' = unchecked)
--   label      the period's label
--   record     the record ('' when the period's copy of it is gone: a call
--              that ran this step before deleted it)
--   start      the period's start, ms
--   retention  settle-retention
--
-- The board's 'frozen' is the newest period recorded: a label at or below
-- it was recorded before (frozen moves in this same step, and only
-- forward), so the record is written into the outbox once whoever calls,
-- however often; with it the label enters the settled periods' index.
--
-- Reply: REPLY_RESET when the generation differs; 1 when this call wrote
-- the record, else 0.
--
--! include consts.lua

local A = {gen = ARGV[1], label = ARGV[2], record = ARGV[3], start = ARGV[4], retention = tonumber(ARGV[5])}

if A.gen ~= '' and redis.call('HGET', KEYS[1], FIELD_GEN) ~= A.gen then return REPLY_RESET end
local label = A.label
local frozen = redis.call('HGET', KEYS[2], FIELD_FROZEN)
if frozen and label <= frozen then return 0 end
redis.call('HSET', KEYS[2], FIELD_FROZEN, label)
redis.call('ZADD', KEYS[4], A.start, label)
redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -A.retention - 1)
if A.record == '' then return 0 end
redis.call('HSET', KEYS[3], label, A.record)
return 1
