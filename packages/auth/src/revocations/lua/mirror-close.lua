-- KEYS[1] the mirror, ARGV[1] now (ms). Marks it not ready (keeps `born`, or sets it when missing) and
-- counts the close, so that a re-seed that began before it cannot open the mirror (mirror-open.lua);
-- returns `born`.
local born = mirror_state(KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], 'ready', '0')
redis.call('HINCRBY', KEYS[1], 'closes', 1)
return born
