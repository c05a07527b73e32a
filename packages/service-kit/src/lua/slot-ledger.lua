-- The loss primitive (slot-ledger.ts): has this slot lost writes that someone depends on? Functions only;
-- a script that needs them starts with this file (slot-ledger.ts, SLOT_LEDGER_LUA).
-- A slot's *ledger* is a hash on the slot whose `born` (ms) says since when the slot holds its data. A
-- writer's *stamp* counts its writes on the slot; the writer remembers the highest count Redis answered
-- (`seen`) and when (`last`, ms of its clock).

-- slot_born(ledger, now): the slot's `born` (as stored: decimal text, ms) and whether this call found the
-- ledger missing: the slot lost its data (a flush, a restart without it) or was never written, which no
-- one can tell apart. A missing ledger is created here, born `now` (the caller's clock), in the same step
-- as the script that asks: telling a loss costs no round trip of its own.
local function slot_born(ledger, now)
  if redis.call('HSETNX', ledger, 'born', now) == 1 then return now, true end
  return redis.call('HGET', ledger, 'born'), false
end

-- slot_behind(ledger, stamp, seen, last, now, ttl_ms): whether the slot went back in time since the
-- writer's last write: its stamp holds less than `seen` (a replica that lagged was promoted, a restart from
-- an old snapshot) and no loss was recorded after that write (else someone found this loss first). Records
-- the loss (born = `now`) when it did. Either way the stamp goes back to `seen`, kept `ttl_ms`, so that the
-- same loss is found once.
local function slot_behind(ledger, stamp, seen, last, now, ttl_ms)
  local held = tonumber(redis.call('GET', stamp) or '0') or 0
  if held >= tonumber(seen) then return false end
  redis.call('SET', stamp, seen, 'PX', ttl_ms)
  local born = tonumber(redis.call('HGET', ledger, 'born') or '0') or 0
  if born >= tonumber(last) then return false end
  redis.call('HSET', ledger, 'born', now)
  return true
end

-- slot_count(stamp, ttl_ms): counts one write on the writer's stamp, in the step that writes it, so that a
-- slot that later holds less is found out (slot_behind). Returns the count.
local function slot_count(stamp, ttl_ms)
  local count = redis.call('INCR', stamp)
  if count == 1 then redis.call('PEXPIRE', stamp, ttl_ms) end
  return count
end
