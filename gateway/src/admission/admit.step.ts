import { REVOCATIONS_RESTORING_MESSAGE } from '@platform/auth';
import { ConflictError, ServiceUnavailableError, TooManyRequestsError, UnauthorizedError } from '@platform/errors';
import { type Logger, keepHeader, requestLog } from '@platform/service-kit';
import type { Step } from '../pipeline/chain.ts';
import type { GatewayMetrics } from '../pipeline/gateway-metrics.ts';
import type { GatewayRequest } from '../pipeline/gateway-request.ts';
import { rateLimitHeaders } from '../rate-limit/rate-limit-headers.ts';
import type { Admission, AdmissionStore } from './admission.ts';

/**
 * The 503 of a signature created in the second its client key's slot was found to have lost its data, or in
 * the second before (replay-store-loss.lua says why): sign again after Retry-After.
 */
export const SIGNED_NEAR_LOSS_MESSAGE = 'Replay protection was reset about when this request was signed; sign it again and retry';

/** While Redis cannot count, nothing is admitted: no quota left, ask again in a second. */
const NO_QUOTA = { remaining: 0, resetMs: 1000 };

/** The key's quota on the answer, whatever it is (CONTRACT.md part 12). */
function setQuotaHeaders(request: GatewayRequest, admission: Admission | undefined): void {
  if (request.policy === undefined) return;
  const headers = rateLimitHeaders(request.policy, admission?.quota ?? NO_QUOTA);
  keepHeader(request.res, 'RateLimit-Policy', headers['RateLimit-Policy']);
  keepHeader(request.res, 'RateLimit', headers.RateLimit);
}

/**
 * Step 5: admission in Redis (admission.ts: the revocation check on the token's bucket for a bearer
 * request beside the client key's script, lua/admit.lua, each on one slot). Turns what Redis
 * found into the request's answer: 401 signed before a loss, 503 in the loss's second or while the
 * revocations are re-seeded, **429 rate limited** (rate-limit/lua/rate-window.lua decides it), 409 nonce or
 * idempotency key reused. Without Redis nothing is proxied: 503 (fail closed, CONTRACT.md part 3).
 */
export function admit(store: AdmissionStore, metrics: GatewayMetrics, logger: Logger): Step {
  return async (request) => {
    const { req, keyId } = request;
    let admission: Admission;
    try {
      request.mayHoldKey = true;
      admission = await store.admit({
        keyId,
        nonce: request.nonce,
        idempotencyKey: request.idempotencyKey,
        method: req.method,
        token: request.bearer.principal,
        bearing: request.operation.needsBearer || req.headers.authorization !== undefined,
        created: request.created,
        owner: request.owner,
        rate: request.policy,
      });
    } catch (err) {
      // A frozen Redis still runs the claim once it resumes; the release, on the same connection, comes after it.
      metrics.rejected('redis-unavailable');
      setQuotaHeaders(request, undefined);
      throw new ServiceUnavailableError(undefined, { cause: err });
    }
    request.admission = admission;
    // Refused before the key was claimed, or its claim taken back (a 503 while the revocations are restored): nothing to free.
    request.mayHoldKey = admission.outcome === 'claimed' || admission.outcome === 'token-revoked';
    setQuotaHeaders(request, admission);
    switch (admission.outcome) {
      case 'signed-before-loss':
        metrics.rejected('signature');
        requestLog(req, logger).warn({ reason: 'created before the replay store lost its data' }, 'request signature rejected');
        throw new UnauthorizedError('Invalid request signature');
      case 'signed-near-loss':
        // Maybe signed after the loss, maybe before (seconds against milliseconds, and a loss found a little after
        // it came): not accepted, but an honest client that signs again a second later is (CONTRACT.md part 13,
        // amended), so no 401 for it to misread.
        metrics.rejected('signed-near-loss');
        requestLog(req, logger).info({ reason: 'created near the time the replay store lost its data' }, 'request asked to sign again');
        throw new ServiceUnavailableError(SIGNED_NEAR_LOSS_MESSAGE, { retryAfterSeconds: Math.max(1, Math.ceil((admission.signAgainMs ?? 1000) / 1000)) });
      case 'revocations-restoring':
        metrics.rejected('revocations-restoring');
        throw new ServiceUnavailableError(REVOCATIONS_RESTORING_MESSAGE);
      case 'rate-limited':
        metrics.rateLimited(keyId);
        throw new TooManyRequestsError('Rate limit exceeded', (admission.quota?.resetMs ?? 1000) / 1000);
      case 'nonce-reused':
        metrics.rejected('nonce-reused');
        throw new ConflictError('Replay attack detected (nonce reused)');
      case 'key-reused':
        metrics.rejected('idempotency-key-reused');
        throw new ConflictError('Duplicate request detected (X-Idempotency-Key)');
      case 'claimed':
      case 'token-revoked':
        // A revoked token is the bearer step's answer, after the bearer verdict (CONTRACT.md part 3 order).
        return;
    }
  };
}
