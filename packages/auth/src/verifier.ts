import type { KeyObject } from 'node:crypto';
import { ServiceUnavailableError, UnauthorizedError } from '@platform/errors';
import jwt from 'jsonwebtoken';
import { type RevocationReader, RevocationsUnavailableError } from './revocations/reader.ts';
import { algorithmOf } from './key-algorithm.ts';
import type { KeySource } from './key-source.ts';
import { type Principal, assertSecondFactor } from './principal.ts';
import { isRole } from './roles.ts';
import { TOKEN_CLOCK_TOLERANCE_S, isAccepted } from './token-lifetime.ts';

export interface TokenVerifierOptions {
  keys: KeySource;
  /** Expected `iss`. */
  issuer: string;
  /** Expected `aud`. */
  audience: string;
  /** Revoked tokens; without them, logout is not seen (only the identity service's logout itself does that). */
  revocations?: Pick<RevocationReader, 'isRevoked'>;
}

export interface VerifyOptions {
  /** Accept a token past its `exp` (logout ends the session of an expired token). The signature still counts. */
  allowExpired?: boolean;
  /** Skip the blacklist (logging out a token twice is not an error). */
  ignoreRevocation?: boolean;
  /**
   * Accept an `aal` 1 token of a user who must show a second factor: the operations of enrolment and of the
   * second factor itself (CONTRACT.md part 15). Without it such a token is refused with 403.
   */
  firstFactorSuffices?: boolean;
}

/** Checks access tokens and says whom they speak for. */
export interface TokenVerifier {
  /** Resolves the principal of a valid, unrevoked token; rejects with 401 `Bad Credentials` otherwise. */
  verify(token: string, options?: VerifyOptions): Promise<Principal>;
  /**
   * The principal of a token this verifier verified itself and remembers, unexpired and with the very key
   * object that verified it still held, at once, with no promise; undefined otherwise (the caller verifies
   * it with `verify`). Nothing is accepted here that this verifier did not verify. Neither the revocations
   * nor the second factor are asked: it is for a caller that has them read elsewhere, risk for a request
   * whose token the gateway checked against the revocations a moment ago (its `v3` assertion over this very
   * `Authorization`, CONTRACT.md part 10), the gateway for one whose admission reads them in its Redis
   * round trip. The key source must keep its keys current by itself (`peek` reads what it holds).
   */
  known(token: string): Principal | undefined;
}

function reject(reason: string): never {
  // The reason is for the log (via `cause`); the client always reads the same text.
  throw new UnauthorizedError('Bad Credentials', { cause: new Error(reason) });
}

/** The principal of verified claims, frozen: one principal may serve many requests at once. */
function frozenPrincipal(claims: jwt.JwtPayload): Principal {
  const principal = Object.freeze(principalOfClaims(claims));
  Object.freeze(principal.roles);
  return principal;
}

function principalOfClaims(claims: jwt.JwtPayload): Principal {
  const { sub, username, roles, sid, jti, exp, iat, aal, sfr, cnf } = claims as Record<string, unknown>;
  const boundTo = cnf === undefined ? undefined : (cnf as { kid?: unknown } | null)?.kid;
  if (
    typeof sub !== 'string' ||
    typeof username !== 'string' ||
    typeof sid !== 'string' ||
    typeof jti !== 'string' ||
    typeof exp !== 'number' ||
    !Array.isArray(roles) ||
    !roles.every(isRole) ||
    (aal !== undefined && aal !== 1 && aal !== 2) ||
    (sfr !== undefined && typeof sfr !== 'boolean') ||
    (iat !== undefined && typeof iat !== 'number') ||
    // A `cnf` that names no key would bind the token to nothing: refused, not taken as unbound.
    (cnf !== undefined && (typeof boundTo !== 'string' || boundTo === ''))
  ) {
    reject('token claims are incomplete');
  }
  // Tokens of earlier versions carry neither: the password alone, no second factor asked of them.
  return {
    userId: sub,
    username,
    roles,
    sessionId: sid,
    tokenId: jti,
    expiresAt: exp,
    // Absent claims stay absent: a principal compares equal to one made without them.
    ...(typeof iat === 'number' ? { issuedAt: iat } : {}),
    ...(typeof boundTo === 'string' ? { clientKeyId: boundTo } : {}),
    aal: aal === 2 ? 2 : 1,
    secondFactorRequired: sfr === true,
  };
}

/** The 503 message while Redis's revocation mirror is being re-seeded after a loss (CONTRACT.md part 13). */
export const REVOCATIONS_RESTORING_MESSAGE = 'Token revocations are being restored after a data loss; try again shortly';

/**
 * Asks the revocations; an unreachable Redis, or a bucket that lost its data and is not re-seeded yet, fails
 * closed as a 503 (a dependency is down), not a 500 and never an accepted token.
 */
async function isRevoked(revocations: Pick<RevocationReader, 'isRevoked'>, principal: Principal): Promise<boolean> {
  try {
    return await revocations.isRevoked(principal);
  } catch (err) {
    // Restoring is a refusal, its message the whole reason (no cause: a warn line, not a fault's).
    if (err instanceof RevocationsUnavailableError) throw new ServiceUnavailableError(REVOCATIONS_RESTORING_MESSAGE);
    throw new ServiceUnavailableError(undefined, { cause: err });
  }
}

/** How many verified tokens a verifier remembers (about 1 kB each). */
const VERIFIED_TOKENS = 2048;

/** A token that passed every check but the blacklist, and the key object that verified it. */
interface VerifiedToken {
  principal: Principal;
  kid: string;
  key: KeyObject;
}

/**
 * A verifier for CONTRACT.md part 4 access tokens: the header's `kid` picks a key, the key fixes the
 * algorithm, then signature, `iss`, `aud`, `exp` and the claims are checked, and last the blacklist.
 *
 * A client sends the same token with every request, and its signature check (ES256: ~100 µs) would
 * cost more than everything else a station lookup does. So a token that verified is remembered (the
 * last VERIFIED_TOKENS, by the exact token text) and, until its `exp`, accepted again without the
 * signature check while its `kid` still names the very key object that verified it: a JWKS refresh
 * makes new key objects, so a key withdrawn by the issuer stops its tokens within one refresh.
 * The blacklist is asked on every request all the same.
 */
export function createTokenVerifier(options: TokenVerifierOptions): TokenVerifier {
  const verified = new Map<string, VerifiedToken>();
  const remembered = async (token: string): Promise<Principal | undefined> => {
    const hit = verified.get(token);
    if (hit === undefined) return undefined;
    // The rule of jsonwebtoken's own `exp` check, with the same tolerance (token-lifetime.ts).
    if (!isAccepted(hit.principal.expiresAt) || (await options.keys.get(hit.kid)) !== hit.key) {
      verified.delete(token);
      return undefined;
    }
    return hit.principal;
  };
  const remember = (token: string, entry: VerifiedToken): void => {
    // Oldest first out: a Map iterates in insertion order.
    if (verified.size >= VERIFIED_TOKENS) verified.delete(verified.keys().next().value as string);
    verified.set(token, entry);
  };
  const verifySignature = async (token: string, allowExpired: boolean): Promise<Principal> => {
    let decoded: jwt.Jwt | null;
    try {
      decoded = jwt.decode(token, { complete: true });
    } catch {
      // jws parses the payload of a `typ: JWT` token with a bare JSON.parse: garbage must be a 401, not a 500.
      decoded = null;
    }
    if (decoded === null || typeof decoded.payload === 'string') reject('not a JWT');
    const kid = decoded.header.kid;
    if (typeof kid !== 'string' || kid === '') reject('token has no kid');
    const key = await options.keys.get(kid);
    if (key === undefined) reject('unknown kid');
    // The key fixes the algorithm (never the token's header, never `none`).
    const algorithm = algorithmOf(key);
    if (algorithm === undefined) reject('key has an unsupported type or size');
    let claims: jwt.JwtPayload;
    try {
      claims = jwt.verify(token, key, {
        algorithms: [algorithm],
        issuer: options.issuer,
        audience: options.audience,
        // One tolerance for every verifier, the one revocations are kept for (token-lifetime.ts).
        clockTolerance: TOKEN_CLOCK_TOLERANCE_S,
        ignoreExpiration: allowExpired,
      }) as jwt.JwtPayload;
    } catch (err) {
      reject(err instanceof Error ? err.message : 'verification failed');
    }
    const principal = frozenPrincipal(claims);
    // Only what passed the `exp` check too: an expired token accepted for logout is not remembered.
    if (!allowExpired) remember(token, { principal, kid, key });
    return principal;
  };
  return {
    known(token) {
      const hit = verified.get(token);
      // The same rule as `remembered`, read synchronously: a key source that cannot say what it holds has the caller verify.
      if (hit === undefined || !isAccepted(hit.principal.expiresAt) || options.keys.peek?.(hit.kid) !== hit.key) return undefined;
      return hit.principal;
    },
    async verify(token, verifyOptions = {}) {
      const principal = (await remembered(token)) ?? (await verifySignature(token, verifyOptions.allowExpired === true));
      if (options.revocations !== undefined && verifyOptions.ignoreRevocation !== true && (await isRevoked(options.revocations, principal))) {
        reject('token is revoked');
      }
      if (verifyOptions.firstFactorSuffices !== true) assertSecondFactor(principal);
      return principal;
    },
  };
}
