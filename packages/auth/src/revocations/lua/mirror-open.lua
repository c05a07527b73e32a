-- KEYS[1] the mirror, ARGV[1] the `born` and ARGV[2] the last close's id (`closed`, '' for none) read
-- before the re-seed. Marks it ready only if it is still that mirror: Redis did not lose it again, and
-- nobody closed it, meanwhile (a close after the read may be a failover that took the re-seed's writes
-- with it). 1 when it did, else 0.
if redis.call('HGET', KEYS[1], 'born') == ARGV[1] and (redis.call('HGET', KEYS[1], 'closed') or '') == ARGV[2] then
  redis.call('HSET', KEYS[1], 'ready', '1')
  return 1
end
return 0
