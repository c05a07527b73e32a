export {
  BLACKLIST_KEY_PREFIX,
  MIRROR_STATE_LUA,
  REVOCATION_MIRROR_KEY,
  type RevocationMirror,
  RevocationsUnavailableError,
  SESSION_REVOCATION_KEY_PREFIX,
  STAMP_LUA,
  STAMP_TTL_MS,
  type TokenBlacklist,
  type WriteStamp,
  blacklistKey,
  closeMirrorOnReconnect,
  onReconnect,
  redisBlacklist,
  revocationKeys,
  revocationMirror,
  sessionRevocationKey,
  watchWriteStamp,
  writeStamp,
} from './revocations/index.ts';
export { type BearerAuthOptions, bearerAuth, bearerTokenOf, principalOf, requireAnyRole } from './express.ts';
export { type Jwks, type JwksKeySource, type JwksKeySourceOptions, type KeySource, jwksKeySource, keysFromJwks, staticKeySource } from './key-source.ts';
export { type Principal, assertAnyRole, assertSelfOrRole, hasAnyRole } from './principal.ts';
export { ROLES, type Role, isRole } from './roles.ts';
export { TOKEN_CLOCK_TOLERANCE_S, isAccepted, revocationExpiry } from './token-lifetime.ts';
export { REVOCATIONS_RESTORING_MESSAGE, type TokenVerifier, type TokenVerifierOptions, type VerifyOptions, createTokenVerifier } from './verifier.ts';
