-- KEYS[1] the mirror, ARGV[1] now (ms). Marks it not ready (keeps `born`, or sets it when missing); returns `born`.
local born = mirror_state(KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], 'ready', '0')
return born
