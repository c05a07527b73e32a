-- rate_window(key, limit, width, spend): one client key's sliding window (CONTRACT.md part 12), counted in
-- one hash per key on Redis's own clock (one clock for every gateway replica). The window is BUCKETS + 1
-- sub-windows of `width` ms (windowS / BUCKETS each); the ones that overlap the last windowS hold what was
-- admitted. They cover windowS plus at most one sub-window, so no S-second span admits more than `limit`,
-- and a client that keeps asking gets at least limit x BUCKETS / (BUCKETS + 1) per window (-9% at 10).
-- `spend` false (a replayed nonce) reads the window for the RateLimit fields but counts nothing.
-- Returns admitted (boolean), remaining (requests left), wait (ms: until one fits when refused, else
-- until the oldest counted one leaves).
local BUCKETS = 10
local function rate_window(key, limit, width, spend)
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  local current = math.floor(now / width)
  local oldest = current - BUCKETS
  local fields = {}
  for i = 0, BUCKETS do fields[i + 1] = oldest + i end
  local counts = redis.call('HMGET', key, unpack(fields))
  local used = 0
  for i = 1, BUCKETS + 1 do
    counts[i] = tonumber(counts[i]) or 0
    used = used + counts[i]
  end
  local first = 1
  if used >= limit then
    -- The first sub-window whose leaving makes room; it leaves when BUCKETS + 1 more have begun.
    local left = used
    while first < BUCKETS + 1 do
      left = left - counts[first]
      if left < limit then break end
      first = first + 1
    end
    return false, 0, (oldest + first - 1 + BUCKETS + 1) * width - now
  end
  if spend then
    redis.call('HINCRBY', key, current, 1)
    redis.call('PEXPIRE', key, (BUCKETS + 1) * width)
    -- Sub-windows that left the window are deleted when a new one begins (rarely: once per sub-window).
    if redis.call('HLEN', key) > BUCKETS + 1 then
      for _, field in ipairs(redis.call('HKEYS', key)) do
        if tonumber(field) < oldest then redis.call('HDEL', key, field) end
      end
    end
    used = used + 1
  end
  while first < BUCKETS + 1 and counts[first] == 0 do first = first + 1 end
  return true, limit - used, (oldest + first - 1 + BUCKETS + 1) * width - now
end
