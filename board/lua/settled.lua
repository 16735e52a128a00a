-- settled.lua (settledLua in scripts.go): the board's step of the
-- settlement of one period of a periodic board (settle.go), after
-- settle.lua copied the period in the period's own slot.
--
-- KEYS: 1 the board's watermark hash P .. 'w' (for the generation), 2 its
--       settle state P .. 'st', 3 its outbox P .. 'o', 4 its settled
--       periods P .. 'SL'
-- ARGV: 1 generation ('' = unchecked), 2 label, 3 the record ('' when the
--       period's copy of it is gone: a call that ran this step before
--       deleted it), 4 period start ms, 5 settle-retention
--
-- The board's 'frozen' is the newest period recorded: a label at or below
-- it was recorded before (frozen moves in this same step, and only
-- forward), so the record is written into the outbox once whoever calls,
-- however often; with it the label enters the settled periods' index.
--
-- Reply: 'reset' when the generation differs; 1 when this call wrote the
-- record, else 0.

if ARGV[1] ~= '' and redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1] then return 'reset' end
local label = ARGV[2]
local frozen = redis.call('HGET', KEYS[2], 'frozen')
if frozen and label <= frozen then return 0 end
redis.call('HSET', KEYS[2], 'frozen', label)
redis.call('ZADD', KEYS[4], ARGV[4], label)
redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -tonumber(ARGV[5]) - 1)
if ARGV[3] == '' then return 0 end
redis.call('HSET', KEYS[3], label, ARGV[3])
return 1
