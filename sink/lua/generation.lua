-- generation.lua (generationLua in scripts.go): reads the generation marker
-- (see generationKey). It is a script, not a GET, so that a pipeline that
-- runs room scripts again after NOSCRIPT reads the marker again after them
-- (redisscript.Pipe.RunCheck): the marker read then vouches for the data
-- set every script reply came from.
--
-- KEYS: 1 generation marker
-- ARGV: none
--
-- Reply: the marker, or "" when Redis has none (it lost its data).

return redis.call('GET', KEYS[1]) or ''
