-- replay_store_loss(born_key, stamp_key, seen, last, now, created): the client key's slot's past against a
-- signature's `created` (Unix seconds), on the loss primitive (service-kit's slot-ledger.lua; CONTRACT.md
-- parts 13 and 14). This gateway's stamp in the slot behind what it saw (the slot went back in time) or a
-- missing ledger (the slot lost its data, or its key was never dated) makes the slot's `born` now. Returns
-- 'signed-before-loss' (its whole second before the loss: the nonces it could be replayed against are gone),
-- 'signed-in-loss-second' (that very second: cannot be told apart, sign again) or nil; and whether this call
-- found the slot gone back in time: its stamp behind while its ledger was there (a replica that lagged was
-- promoted). A slot found without its ledger lost its data with its stamp (a flush, an empty restart): so did
-- the revocation buckets of its shard, which their own ledgers tell.
local function replay_store_loss(born_key, stamp_key, seen, last, now, created)
  local existed = redis.call('EXISTS', born_key) == 1
  local went_back = slot_behind(born_key, stamp_key, seen, last, now, STAMP_TTL_MS) and existed
  local loss = tonumber((slot_born(born_key, now))) / 1000
  if created + 1 <= loss then return 'signed-before-loss', went_back end
  if created < loss then return 'signed-in-loss-second', went_back end
  return nil, went_back
end
