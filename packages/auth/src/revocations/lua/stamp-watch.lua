-- KEYS[1] the mirror, KEYS[2] the writer's stamp; ARGV: seen, last (ms), now (ms), ttl (ms). Checks the
-- stamp (a loss marks the mirror lost) and keeps it from expiring: 1 when Redis went back in time.
local lost = stamp_check(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
if lost then return 1 end
return 0
