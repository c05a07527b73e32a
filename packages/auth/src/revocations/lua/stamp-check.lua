-- stamp_check(mirror_key, stamp_key, seen, last, now, ttl_ms): whether Redis went back in time. A writer's
-- stamp counts its writes; the writer remembers the highest count Redis answered (`seen`) and when (`last`,
-- ms). Redis holding less lost some of them (a lagging replica promoted, a restart from an old snapshot):
-- the mirror is marked lost now (born = now, not ready), unless a loss was marked after the writer's last
-- write already (another process found the same loss first). Either way the stamp goes back to `seen`,
-- kept `ttl_ms`, so the same loss is not found twice. True when this call marked the loss.
local function stamp_check(mirror_key, stamp_key, seen, last, now, ttl_ms)
  local held = tonumber(redis.call('GET', stamp_key) or '0') or 0
  if held >= tonumber(seen) then return false end
  redis.call('SET', stamp_key, seen, 'PX', ttl_ms)
  local born = tonumber(redis.call('HGET', mirror_key, 'born') or '0') or 0
  if born >= tonumber(last) then return false end
  redis.call('HSET', mirror_key, 'born', now)
  redis.call('HSET', mirror_key, 'ready', '0')
  return true
end
