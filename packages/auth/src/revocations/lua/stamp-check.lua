-- stamp_went_back(state_key, stamp_key, seen, last, ttl_ms): whether Redis went back in time since a
-- writer's last write. A writer's stamp counts its writes; the writer remembers the highest count Redis
-- answered (`seen`) and when (`last`, ms). Redis holding less lost some of them (a lagging replica
-- promoted, a restart from an old snapshot). True unless the hash `state_key` records a loss (`born`)
-- after the writer's last write already (another process found the same loss first). Either way the stamp
-- goes back to `seen`, kept `ttl_ms`, so the same loss is not found twice. The caller marks the loss.
local function stamp_went_back(state_key, stamp_key, seen, last, ttl_ms)
  local held = tonumber(redis.call('GET', stamp_key) or '0') or 0
  if held >= tonumber(seen) then return false end
  redis.call('SET', stamp_key, seen, 'PX', ttl_ms)
  local born = tonumber(redis.call('HGET', state_key, 'born') or '0') or 0
  return born < tonumber(last)
end

-- stamp_check(mirror_key, stamp_key, seen, last, now, ttl_ms): stamp_went_back on a revocation mirror's
-- hash, marking the mirror lost now (born = now, not ready) when it did. True when this call marked the loss.
local function stamp_check(mirror_key, stamp_key, seen, last, now, ttl_ms)
  if not stamp_went_back(mirror_key, stamp_key, seen, last, ttl_ms) then return false end
  redis.call('HSET', mirror_key, 'born', now)
  redis.call('HSET', mirror_key, 'ready', '0')
  return true
end
