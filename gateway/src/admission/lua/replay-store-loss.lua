-- replay_store_loss(born_key, stamp_key, seen, last, now, created): the client key's slot's past against a
-- signature's `created` (Unix seconds), on the loss primitive (service-kit's slot-ledger.lua; CONTRACT.md
-- parts 13 and 14). This gateway's stamp in the slot behind what it saw (the slot went back in time) or a
-- missing ledger (the slot lost its data, or its key was never dated) makes the slot's `born` now. Returns
-- 'signed-before-loss' (its second over a whole second before the loss's second: the nonces it could be
-- replayed against are gone), 'signed-near-loss' (the loss's second or the one before it) or nil; and whether
-- this call found the slot gone back in time: its stamp behind while its ledger was there (a replica that
-- lagged was promoted). A slot found without its ledger lost its data with its stamp (a flush, an empty
-- restart): so did the revocation buckets of its shard, which their own ledgers tell.
-- Why the second before too: the loss is dated when it is found (by a script, or a stamp check on reconnect),
-- which may trail the loss itself by a reconnect. A request signed after the loss but before it was found,
-- across a second's boundary, cannot be told from one signed before the loss: it is refused all the same,
-- but asked to sign again (a 503) rather than told its signature is bad (a 401 its client would not retry).
local function replay_store_loss(born_key, stamp_key, seen, last, now, created)
  local existed = redis.call('EXISTS', born_key) == 1
  local went_back = slot_behind(born_key, stamp_key, seen, last, now, STAMP_TTL_MS) and existed
  local loss = tonumber((slot_born(born_key, now))) / 1000
  if created + 2 <= loss then return 'signed-before-loss', went_back end
  if created < loss then return 'signed-near-loss', went_back end
  return nil, went_back
end
