-- mirror_state(key, now): the revocation mirror's state, `born` (as stored: decimal text, ms) and whether
-- it is whole (`ready` = '1'). A missing hash (Redis lost its data) is created here, not ready and born
-- `now` (the caller's clock, ms), in the same atomic step as the script that asks: telling a lost Redis
-- costs no extra round trip.
local function mirror_state(key, now)
  local ready = redis.call('HGET', key, 'ready')
  if not ready then
    redis.call('HSETNX', key, 'born', now)
    redis.call('HSETNX', key, 'ready', '0')
    ready = redis.call('HGET', key, 'ready')
  end
  return redis.call('HGET', key, 'born'), ready == '1'
end
