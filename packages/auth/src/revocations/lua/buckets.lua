-- Revocation buckets (buckets.ts), on the loss primitive (service-kit's slot-ledger.lua, loaded before this
-- file). A bucket's ledger also says whether its revocations are whole: `ready` '1' once identity re-seeded
-- them since the last loss or close (*open*), and `closed`, the id of the last close. Functions only: each
-- script of the module is one call of one of them (buckets.ts, BUCKET_SCRIPTS).

-- bucket_state(ledger, now): the bucket's `born` and whether it is open. A bucket found lost is closed.
local function bucket_state(ledger, now)
  local born, lost = slot_born(ledger, now)
  if lost then redis.call('HSET', ledger, 'ready', '0') end
  return born, redis.call('HGET', ledger, 'ready') == '1'
end

-- is_revoked(ledger, token_key, session_key, now): one request's check: -1 while the bucket is closed, else
-- how many of the token's two revocation keys exist.
local function is_revoked(ledger, token_key, session_key, now)
  local _, open = bucket_state(ledger, now)
  if not open then return -1 end
  return redis.call('EXISTS', token_key, session_key)
end

-- bucket_check(ledger, stamp, seen, last, now, ttl_ms): the writer's look at one bucket: a stamp gone back
-- closes it (a loss), then its state. Returns '<born>:<open 1|0>:<went back 1|0>:<last close id>', where
-- "went back" means the stamp went back while the ledger was there (a replica that lagged was promoted): a
-- ledger found missing lost its data with the stamp (a flush, an empty restart).
local function bucket_check(ledger, stamp, seen, last, now, ttl_ms)
  local existed = redis.call('EXISTS', ledger) == 1
  local behind = slot_behind(ledger, stamp, seen, last, now, ttl_ms)
  if behind then redis.call('HSET', ledger, 'ready', '0') end
  redis.call('PEXPIRE', stamp, ttl_ms)
  local born, open = bucket_state(ledger, now)
  local went_back = behind and existed
  return born .. ':' .. (open and '1' or '0') .. ':' .. (went_back and '1' or '0') .. ':' .. (redis.call('HGET', ledger, 'closed') or '')
end

-- bucket_close(ledger, now, close_id): closes the bucket (its `born` kept, or now when it was lost) and names
-- the close: a re-seed that read the bucket before it cannot open it (bucket_open). An id, not a count,
-- which a replica that lagged could reach again. Returns `born`.
local function bucket_close(ledger, now, close_id)
  local born = bucket_state(ledger, now)
  redis.call('HSET', ledger, 'ready', '0', 'closed', close_id)
  return born
end

-- bucket_open(ledger, born, closed): opens the bucket after a re-seed of it as it was read (`born`, and the
-- last close's id, '' for none), unless it was lost or closed again meanwhile (a close after the read may be
-- a failover that took the re-seed's writes with it). 1 when it did, else 0.
local function bucket_open(ledger, born, closed)
  if redis.call('HGET', ledger, 'born') == born and (redis.call('HGET', ledger, 'closed') or '') == closed then
    redis.call('HSET', ledger, 'ready', '1')
    return 1
  end
  return 0
end
