-- KEYS[1] an idempotency key, ARGV[1] the owner that claimed it. Deletes it only while it still belongs
-- to that request (a key released and claimed again by a retry is the retry's): 1 when deleted.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
