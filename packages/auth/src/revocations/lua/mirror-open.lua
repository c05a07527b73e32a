-- KEYS[1] the mirror, ARGV[1] the `born` that was re-seeded. Marks it ready only if it is still that
-- mirror (Redis did not lose it again meanwhile): 1 when it did, else 0.
if redis.call('HGET', KEYS[1], 'born') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'ready', '1')
  return 1
end
return 0
