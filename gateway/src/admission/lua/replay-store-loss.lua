-- replay_store_loss(mirror_key, stamp_key, seen, last, now, created): what Redis knows of its own past
-- (CONTRACT.md part 13), with @platform/auth's stamp_check and mirror_state. The writer's stamp (this
-- gateway's nonce writes as Redis counted them: `seen`, read back at `last` ms) holding less means Redis went
-- back in time and the mirror is marked lost now; a missing mirror means Redis lost its data (created here,
-- not whole). The loss moment is the mirror's `born` (ms); `created` is the signature's (Unix seconds).
-- Returns 'signed-before-loss' (its whole second before the loss: the nonces it could replay against are
-- gone), 'signed-in-loss-second' (that very second: cannot be told apart, sign again) or nil; and whether
-- the revocation mirror is whole.
local function replay_store_loss(mirror_key, stamp_key, seen, last, now, created)
  stamp_check(mirror_key, stamp_key, seen, last, now, STAMP_TTL_MS)
  local born, whole = mirror_state(mirror_key, now)
  local loss = tonumber(born) / 1000
  if created + 1 <= loss then return 'signed-before-loss', whole end
  if created < loss then return 'signed-in-loss-second', whole end
  return nil, whole
end

-- stamp_count(stamp_key): counts one nonce written on this gateway's write stamp, in the same step as the
-- write, so a Redis that later holds less is found out. Returns the count.
local function stamp_count(stamp_key)
  local count = redis.call('INCR', stamp_key)
  if count == 1 then redis.call('PEXPIRE', stamp_key, STAMP_TTL_MS) end
  return count
end
