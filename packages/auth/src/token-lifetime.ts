/**
 * How long an access token is accepted, and so how long its revocation must be remembered. Both rules
 * live here, next to each other, so that they cannot drift apart: every verifier (gateway, identity,
 * risk, and the verified-token cache) accepts a token by `isAccepted`, and every revocation in Redis
 * is kept until `revocationExpiry`, which is later than the last moment `isAccepted` can say yes.
 */

/**
 * How far past its `exp` a verifier still accepts a token: the allowance for clocks that differ between
 * identity (which stamps `iat`/`exp`) and the verifiers. It is also the bound this platform assumes on
 * the difference of any two of its clocks, Redis's included.
 */
export const TOKEN_CLOCK_TOLERANCE_S = 5;

/**
 * Whether a token that expires at `exp` (epoch seconds) is still accepted at `nowMs`: jsonwebtoken's
 * own rule (whole seconds of the verifier's clock, `now < exp + tolerance`), which `jwt.verify` applies
 * with the same tolerance.
 */
export function isAccepted(exp: number, nowMs: number = Date.now()): boolean {
  return Math.floor(nowMs / 1000) < exp + TOKEN_CLOCK_TOLERANCE_S;
}

/**
 * Until when (epoch seconds, Redis's clock: `EXAT`) the revocation of a token expiring at `exp` must be
 * kept. A verifier accepts the token up to `exp + tolerance` by its own clock, and that clock may run up
 * to the tolerance behind Redis's: so the revocation lasts twice the tolerance past `exp`. Kept shorter,
 * a revoked token comes back for the last seconds of its life.
 */
export function revocationExpiry(exp: number): number {
  return Math.ceil(exp) + 2 * TOKEN_CLOCK_TOLERANCE_S;
}
