-- KEYS[1] the mirror, ARGV[1] now (ms). Returns '<born>:<ready 1|0>:<last close's id>', creating the mirror when it is missing.
local born, ready = mirror_state(KEYS[1], ARGV[1])
return born .. ':' .. (ready and '1' or '0') .. ':' .. (redis.call('HGET', KEYS[1], 'closed') or '')
