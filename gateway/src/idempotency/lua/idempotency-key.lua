-- idempotency_claim(key, owner, ttl_ms): claims an idempotency key for `owner` (CONTRACT.md part 3; SET NX
-- PX: of N concurrent requests one wins). The owner is written so that only this request can release it.
local function idempotency_claim(key, owner, ttl_ms)
  return redis.call('SET', key, owner, 'NX', 'PX', ttl_ms) ~= false
end
