-- KEYS[1] a bucket's mirror, KEYS[2] the writer's stamp in that bucket; ARGV: seen, last (ms), now (ms), ttl (ms).
-- Identity's keeper, once per bucket and check: a stamp gone back marks the bucket's mirror lost, then the
-- mirror's state (created not ready when missing). Returns '<born>:<ready 1|0>:<went back 1|0>:<last close's id>',
-- where "went back" means the stamp went back while the mirror was still there (a lagging replica promoted):
-- a mirror found missing lost its data with the stamp (a flush, an empty restart), whoever reached it first.
local existed = redis.call('EXISTS', KEYS[1]) == 1
local went_back = stamp_check(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4]) and existed
redis.call('PEXPIRE', KEYS[2], ARGV[4])
local born, ready = mirror_state(KEYS[1], ARGV[3])
return born .. ':' .. (ready and '1' or '0') .. ':' .. (went_back and '1' or '0') .. ':' .. (redis.call('HGET', KEYS[1], 'closed') or '')
