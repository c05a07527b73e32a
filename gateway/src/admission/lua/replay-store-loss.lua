-- born_state(born_key, now): since when (ms) this client key's slot has held its nonces: the hash's `born`,
-- created `now` (the caller's clock) when missing, as a slot that lost its data (CONTRACT.md part 13).
local function born_state(born_key, now)
  local born = redis.call('HGET', born_key, 'born')
  if not born then
    redis.call('HSETNX', born_key, 'born', now)
    born = redis.call('HGET', born_key, 'born')
  end
  return born
end

-- replay_store_loss(born_key, stamp_key, seen, last, now, created): what the client key's slot knows of its
-- own past (CONTRACT.md parts 13 and 14), with @platform/auth's stamp_went_back. The writer's stamp in this slot
-- (this gateway's nonce writes of this key as Redis counted them: `seen`, read back at `last` ms) holding
-- less means the slot went back in time and its `born` becomes now; a missing `born` means the slot lost its
-- data (created here). `created` is the signature's (Unix seconds). Returns 'signed-before-loss' (its whole
-- second before the loss: the nonces it could replay against are gone), 'signed-in-loss-second' (that very
-- second: cannot be told apart, sign again) or nil; and whether this call found the slot gone back.
local function replay_store_loss(born_key, stamp_key, seen, last, now, created)
  local went_back = stamp_went_back(born_key, stamp_key, seen, last, STAMP_TTL_MS)
  if went_back then redis.call('HSET', born_key, 'born', now) end
  local loss = tonumber(born_state(born_key, now)) / 1000
  if created + 1 <= loss then return 'signed-before-loss', went_back end
  if created < loss then return 'signed-in-loss-second', went_back end
  return nil, went_back
end

-- stamp_count(stamp_key): counts one nonce written on this gateway's write stamp of the slot, in the same
-- step as the write, so a slot that later holds less is found out. Returns the count.
local function stamp_count(stamp_key)
  local count = redis.call('INCR', stamp_key)
  if count == 1 then redis.call('PEXPIRE', stamp_key, STAMP_TTL_MS) end
  return count
end
