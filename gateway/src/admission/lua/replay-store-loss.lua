-- replay_store_loss(born_key, stamp_key, seen, last, now, created): the client key's slot's past against a
-- signature's `created` (Unix seconds), on the loss primitive (service-kit's slot-ledger.lua; CONTRACT.md
-- parts 13 and 14). This gateway's stamp in the slot behind what it saw (the slot went back in time) or a
-- missing ledger (the slot lost its data, or its key was never dated) makes the slot's `born` now. Returns
-- 'signed-before-loss' (its second over a whole second before the loss's second: the nonces it could be
-- replayed against are gone), 'signed-near-loss' (the loss's second or the one before it; signed ahead:
-- below) or nil; whether this call found the slot gone back in time: its stamp behind while its ledger
-- was there (a replica that lagged was promoted); and for a refusal below `ahead`, the ms until it is past. A slot found without its ledger lost its data with its
-- stamp (a flush, an empty restart): so did the revocation buckets of its shard, which their own ledgers
-- tell.
-- Why the second before too: the loss is dated when it is found (by a script, or a stamp check on reconnect),
-- which may trail the loss itself by a reconnect. A request signed after the loss but before it was found,
-- across a second's boundary, cannot be told from one signed before the loss: it is refused all the same, but
-- asked to sign again (a 503) rather than told its signature is bad (a 401 its client would not retry).
-- A signature created ahead of the gateway's clock (CONTRACT.md part 2 allows SIGNATURE_MAX_SKEW_S) may have
-- been sent before the loss although its `created` is after it: the gateway that admitted it remembers its
-- nonce and writes it again within 0.1 s of the loss's dating (admission.ts, SignedAhead), but until
-- then another gateway cannot tell its replay. So for SIGNED_AHEAD_WINDOW_MS after `born`, a `created` ahead
-- of this call's second is asked to sign again too (a clock that keeps time never signs ahead). And a
-- `created` at or below the ledger's `ahead` (the newest `created` signed ahead that a gateway admitted and
-- could not keep: its memory of the key was full) is, for as long as such a signature can be accepted.
local function replay_store_loss(born_key, stamp_key, seen, last, now, created)
  local existed = redis.call('EXISTS', born_key) == 1
  local went_back = slot_behind(born_key, stamp_key, seen, last, now, STAMP_TTL_MS) and existed
  local born = tonumber((slot_born(born_key, now)))
  local loss = born / 1000
  if created + 2 <= loss then return 'signed-before-loss', went_back end
  if created < loss then return 'signed-near-loss', went_back end
  local now_ms = tonumber(now)
  local ahead_of_clock = created > math.floor(now_ms / 1000)
  if ahead_of_clock and now_ms < born + SIGNED_AHEAD_WINDOW_MS then return 'signed-near-loss', went_back end
  local ahead = tonumber(redis.call('HGET', born_key, 'ahead') or '0') or 0
  if created <= ahead then return 'signed-near-loss', went_back, (ahead + 1) * 1000 - now_ms end
  return nil, went_back
end
