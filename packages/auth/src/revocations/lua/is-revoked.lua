-- KEYS[1] the mirror, KEYS[2] the token's blacklist key, KEYS[3] its session's; ARGV[1] now (ms).
-- One request's revocation check: -1 while the mirror is not whole, else how many of the two keys exist.
local _, ready = mirror_state(KEYS[1], ARGV[1])
if not ready then return -1 end
return redis.call('EXISTS', KEYS[2], KEYS[3])
