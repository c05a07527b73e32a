-- KEYS[1] the mirror, ARGV[1] now (ms), ARGV[2] a loss found elsewhere (ms). Marks it not ready and born no
-- earlier than that loss (the whole-Redis mirror when one bucket's shard lost its data); returns `born`.
local born = mirror_state(KEYS[1], ARGV[1])
if tonumber(born) < tonumber(ARGV[2]) then
  born = ARGV[2]
  redis.call('HSET', KEYS[1], 'born', born)
end
redis.call('HSET', KEYS[1], 'ready', '0')
return born
