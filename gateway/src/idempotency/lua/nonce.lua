-- nonce_holder(key): who burnt a signature's nonce (the owner `nonce_claim` wrote; another gateway's
-- mark for one it re-wrote after a loss), false when it was never seen (CONTRACT.md part 2). Read before
-- anything is counted, so that a replay spends no quota.
local function nonce_holder(key)
  return redis.call('GET', key)
end

-- nonce_claim(key, owner, ttl_ms): burns the nonce (SET NX PX: of N concurrent requests one wins). A nonce,
-- once seen, stays burnt whatever happens next, but for one case: a request answered 503 while its token's
-- revocations are re-seeded had it taken back (withdraw.lua). True when this request won it.
local function nonce_claim(key, owner, ttl_ms)
  return redis.call('SET', key, owner, 'NX', 'PX', ttl_ms) ~= false
end
