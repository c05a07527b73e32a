-- KEYS[1] a nonce, KEYS[2] an idempotency key (one client key's slot), ARGV[1] the owner that claimed them.
-- Takes back a request's claims when it is refused after its admission for a reason that claims nothing
-- (CONTRACT.md part 13: a 503 while the token's revocations are re-seeded), so the same signed request
-- passes once they are: each key is deleted only while it still belongs to that request. Returns how many.
local deleted = 0
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then deleted = deleted + redis.call('DEL', key) end
end
return deleted
