-- The client key's admission, one script on the key's slot (`{ck:<keyId>}`): may this signed request pass?
-- The named functions above (loaded by admission.ts) do the work; this is only their order, CONTRACT.md
-- parts 3, 12 and 13: the slot's past → replay (read only) → rate window → nonce → idempotency key. The
-- revocation check runs beside this script, on the token's bucket; admission.ts ranks its verdict after
-- the slot's past and before the rest, and takes back this request's claims when it refuses.
-- KEYS and ARGV by name, in the order of admission.ts ADMISSION_KEYS and ADMISSION_ARGS.
local key = { rate = KEYS[1], nonce = KEYS[2], idempotency = KEYS[3], born = KEYS[4], stamp = KEYS[5] }
local arg = {
  nonce_ttl_ms = ARGV[1], key_ttl_ms = ARGV[2], owner = ARGV[3], limit = tonumber(ARGV[4]), width_ms = tonumber(ARGV[5]),
  created = tonumber(ARGV[6]), now = ARGV[7], stamp_seen = ARGV[8], stamp_last = ARGV[9],
}

-- The result, by name in admission.ts: { outcome, remaining (-1 without a limit), wait_ms, stamp (0: no nonce
-- written), went_back (1: this call found the slot gone back in time), and for a refusal of the slot's past the
-- ms to wait before signing again }. Refusals before the window is read answer with no quota left and a second
-- to wait, as an unreachable Redis.
local loss, went_back, sign_again_ms = replay_store_loss(key.born, key.stamp, arg.stamp_seen, arg.stamp_last, arg.now, arg.created)
local back = went_back and 1 or 0
if loss then return { loss, 0, 1000, 0, back, sign_again_ms or 1000 } end

-- A replay is told apart before anything is counted: whoever captured a signed request must not spend its
-- key's quota by sending it again (its 409 still carries the window's RateLimit fields).
local holder = nonce_holder(key.nonce)
local remaining, wait = -1, 0
if holder == arg.owner then
  -- This very call again: the client sent it once more on a new connection, the one it was written to having
  -- dropped before the answer came (ioredis resends what was not answered). Answered as it was the first
  -- time, nothing counted or claimed twice; its nonce was written then (stamp 0: none now).
  if arg.limit > 0 then
    local _
    _, remaining, wait = rate_window(key.rate, arg.limit, arg.width_ms, false)
  end
  return { redis.call('GET', key.idempotency) == arg.owner and 'claimed' or 'key-reused', remaining, wait, 0, back }
end
local replayed = holder ~= false
if arg.limit > 0 then
  local admitted
  admitted, remaining, wait = rate_window(key.rate, arg.limit, arg.width_ms, not replayed)
  -- Refused: nothing is written, its nonce stays fresh and its idempotency key unclaimed.
  if not admitted then return { replayed and 'nonce-reused' or 'rate-limited', 0, wait, 0, back } end
end
if replayed or not nonce_claim(key.nonce, arg.owner, arg.nonce_ttl_ms) then return { 'nonce-reused', remaining, wait, 0, back } end
local stamp = slot_count(key.stamp, STAMP_TTL_MS)
if not idempotency_claim(key.idempotency, arg.owner, arg.key_ttl_ms) then return { 'key-reused', remaining, wait, stamp, back } end
return { 'claimed', remaining, wait, stamp, back }
