import { type Principal, type TokenVerifier, bearerTokenOf } from '@platform/auth';
import { HttpError, UnauthorizedError } from '@platform/errors';

/** The bearer verdict, kept until the Redis checks that come before it in CONTRACT.md part 3 have run. */
export type BearerVerdict = { principal: Principal | undefined; fault?: undefined } | { principal?: undefined; fault: HttpError };

/**
 * Verifies the request's bearer token locally (signature, `iss`, `aud`, `exp`, claims) without the
 * blacklist, which the replay guard reads in the same Redis round trip, nor the second factor, which is
 * judged after it (a revoked token is 401 before it is 403). A 401 is returned, not thrown, so that a
 * replayed nonce still answers 409 first; a 5xx (keys unavailable) is thrown at once.
 */
const FIRST_FACTOR = { firstFactorSuffices: true } as const;

export async function checkBearer(verifier: TokenVerifier, authorization: string | undefined): Promise<BearerVerdict> {
  const token = bearerTokenOf(authorization);
  if (token === undefined) return { fault: new UnauthorizedError('Bad Credentials', { cause: new Error('no bearer token') }) };
  try {
    return { principal: await verifier.verify(token, FIRST_FACTOR) };
  } catch (err) {
    if (err instanceof HttpError && err.status === 401) return { fault: err };
    throw err;
  }
}

/**
 * The verdict `checkBearer` would give, at once and with no promise, for a token the verifier verified
 * and remembers (`TokenVerifier.known`: its key still held, unexpired); undefined for any other, which
 * `checkBearer` verifies. The revocations are admission's to read, as for `checkBearer`.
 */
export function knownBearer(verifier: TokenVerifier, authorization: string | undefined): BearerVerdict | undefined {
  const token = bearerTokenOf(authorization);
  const principal = token === undefined ? undefined : verifier.known(token);
  return principal === undefined ? undefined : { principal };
}
