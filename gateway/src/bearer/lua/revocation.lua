-- token_revoked(token_key, session_key): whether a bearer token was revoked, itself or its session (the
-- keys of @platform/auth's revocationKeys). Only read. Whether the revocations are whole at all is the
-- mirror's business (mirror_state).
local function token_revoked(token_key, session_key)
  return redis.call('EXISTS', token_key, session_key) > 0
end
