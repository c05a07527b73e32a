import { type Principal, type TokenVerifier, bearerTokenOf } from '@platform/auth';
import { HttpError, UnauthorizedError } from '@platform/errors';

/**
 * The operations callable without an access token (CONTRACT.md part 4). Matched on the exact raw
 * path, so no spelling of another route can pass for one of them; the upstream answers the method.
 */
export const PUBLIC_PATHS: ReadonlySet<string> = new Set([
  '/v1/auth/login',
  '/v1/auth/refresh',
  '/v1/auth/logout',
  '/v1/users/password-reset',
  '/v1/users/password-reset-request',
]);

/** True when the gateway must see a valid bearer token before proxying to `path`. */
export function needsBearer(path: string): boolean {
  return !PUBLIC_PATHS.has(path);
}

/** The bearer verdict, kept until the Redis checks that come before it in CONTRACT.md part 3 have run. */
export type BearerVerdict = { principal: Principal | undefined; fault?: undefined } | { principal?: undefined; fault: HttpError };

/**
 * Verifies the request's bearer token locally (signature, `iss`, `aud`, `exp`, claims) without the
 * blacklist, which the replay guard reads in the same Redis round trip. A 401 is returned, not thrown,
 * so that a replayed nonce still answers 409 first; a 5xx (keys unavailable) is thrown at once.
 */
export async function checkBearer(verifier: TokenVerifier, authorization: string | undefined): Promise<BearerVerdict> {
  const token = bearerTokenOf(authorization);
  if (token === undefined) return { fault: new UnauthorizedError('Bad Credentials', { cause: new Error('no bearer token') }) };
  try {
    return { principal: await verifier.verify(token) };
  } catch (err) {
    if (err instanceof HttpError && err.status === 401) return { fault: err };
    throw err;
  }
}
