-- KEYS[1] a client key's born hash, KEYS[2] this gateway's stamp in that key's slot; ARGV: seen, last (ms),
-- now (ms), ttl (ms). Checks the stamp (gone back: the slot's `born` becomes now) and keeps it from
-- expiring: 1 when the slot went back in time.
local lost = stamp_went_back(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[4])
if lost then redis.call('HSET', KEYS[1], 'born', ARGV[3]) end
redis.call('PEXPIRE', KEYS[2], ARGV[4])
if lost then return 1 end
return 0
