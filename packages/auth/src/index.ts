export {
  REVOCATION_LIBRARY_LUA,
  type RevocationCheck,
  type RevocationReader,
  type RevocationWriter,
  RevocationsUnavailableError,
  createRevocationReader,
  createRevocationWriter,
} from './revocations/index.ts';
export { type BearerAuthOptions, bearerAuth, bearerTokenOf, principalOf, requireAnyRole } from './express.ts';
export { type TokenAlgorithm, algorithmOf } from './key-algorithm.ts';
export { type Jwks, type JwksKeySource, type JwksKeySourceOptions, type KeySource, jwksKeySource, keysFromJwks, publicJwks, staticKeySource } from './key-source.ts';
export {
  INTROSPECTION_KEY_MESSAGE,
  type Principal,
  SECOND_FACTOR_REQUIRED_MESSAGE,
  TOKEN_BOUND_ELSEWHERE_MESSAGE,
  assertAnyRole,
  assertBoundTo,
  assertSecondFactor,
  assertSelfOrRole,
  hasAnyRole,
  isBoundElsewhere,
} from './principal.ts';
export { ROLES, type Role, isRole } from './roles.ts';
export { TOKEN_CLOCK_TOLERANCE_S, isAccepted, revocationExpiry } from './token-lifetime.ts';
export { REVOCATIONS_RESTORING_MESSAGE, type TokenVerifier, type TokenVerifierOptions, type VerifyOptions, createTokenVerifier } from './verifier.ts';
export { parseTokenIssuer, tokenSettingsSpec } from './token-settings.ts';
