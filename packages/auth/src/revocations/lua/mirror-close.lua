-- KEYS[1] the mirror, ARGV[1] now (ms), ARGV[2] this close's id (random). Marks it not ready (keeps
-- `born`, or sets it when missing) and names the close, so that a re-seed that read the mirror before it
-- cannot open it (mirror-open.lua): an id, not a count, which a replica that lagged could reach again.
-- Returns `born`.
local born = mirror_state(KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], 'ready', '0', 'closed', ARGV[2])
return born
