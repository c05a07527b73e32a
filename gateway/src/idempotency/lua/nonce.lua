-- nonce_seen(key): whether a signature's nonce was seen already (CONTRACT.md part 2), read before anything
-- is counted so that a replay spends no quota.
local function nonce_seen(key)
  return redis.call('EXISTS', key) == 1
end

-- nonce_claim(key, owner, ttl_ms): burns the nonce (SET NX PX: of N concurrent requests one wins). A nonce,
-- once seen, stays burnt whatever happens next, but for one case: a request answered 503 while its token's
-- revocations are re-seeded had it taken back (withdraw.lua). True when this request won it.
local function nonce_claim(key, owner, ttl_ms)
  return redis.call('SET', key, owner, 'NX', 'PX', ttl_ms) ~= false
end
