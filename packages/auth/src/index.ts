export {
  BLACKLIST_KEY_PREFIX,
  SESSION_REVOCATION_KEY_PREFIX,
  type TokenBlacklist,
  blacklistKey,
  redisBlacklist,
  revocationKeys,
  sessionRevocationKey,
} from './blacklist.ts';
export { bearerAuth, bearerTokenOf, principalOf, requireAnyRole } from './express.ts';
export {
  MIRROR_STATE_LUA,
  REVOCATION_MIRROR_KEY,
  type RevocationMirror,
  RevocationsUnavailableError,
  closeMirrorOnReconnect,
  onReconnect,
  revocationMirror,
} from './revocation-mirror.ts';
export { type Jwks, type JwksKeySource, type JwksKeySourceOptions, type KeySource, jwksKeySource, keysFromJwks, staticKeySource } from './key-source.ts';
export { type Principal, assertAnyRole, assertSelfOrRole, hasAnyRole } from './principal.ts';
export { ROLES, type Role, isRole } from './roles.ts';
export { STAMP_LUA, STAMP_TTL_MS, type WriteStamp, watchWriteStamp, writeStamp } from './write-stamp.ts';
export { REVOCATIONS_RESTORING_MESSAGE, type TokenVerifier, type TokenVerifierOptions, type VerifyOptions, createTokenVerifier } from './verifier.ts';
