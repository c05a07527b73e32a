import { ForbiddenError, UnauthorizedError } from '@platform/errors';
import { type Logger, requestLog } from '@platform/service-kit';
import type { Step } from '../pipeline/chain.ts';
import type { GatewayMetrics } from '../pipeline/gateway-metrics.ts';
import type { RateLimits } from '../rate-limit/rate-limits.ts';
import { SignatureFault } from './signature-fault.ts';
import { type SignatureVerifierOptions, verifyRequestSignature } from './verify-request.ts';

/** The 403 of a client key whose entry does not say `"introspection": true`, at the introspection endpoint. */
export const INTROSPECTION_KEY_MESSAGE = 'This client key may not introspect tokens';

/**
 * Step 3: the RFC 9421 signature over the request and its body (CONTRACT.md part 2). Any fault → 401
 * `Invalid request signature`; the precise reason goes to the log only. Names the client key, and with it
 * the rate limit that admission counts against. A valid signature of a key not marked for introspection, on
 * the introspection endpoint, answers 403.
 */
export function verifySignature(options: SignatureVerifierOptions, rateLimits: RateLimits, metrics: GatewayMetrics, logger: Logger): Step {
  return async (request) => {
    const { req } = request;
    let introspection = false;
    try {
      const verified = await verifyRequestSignature({ method: req.method, target: req.originalUrl, authority: req.headers.host, headers: req.headers }, request.body, options);
      request.keyId = verified.keyId;
      request.nonce = verified.nonce;
      request.created = verified.created;
      request.policy = rateLimits.policyFor(verified.keyId);
      introspection = verified.introspection;
    } catch (err) {
      if (!(err instanceof SignatureFault)) throw err;
      metrics.rejected('signature');
      requestLog(req, logger).warn({ reason: err.message }, 'request signature rejected');
      throw new UnauthorizedError('Invalid request signature', { cause: err });
    }
    // Introspection tells which tokens are alive: for the resource servers' keys alone (CONTRACT.md part 16).
    if (request.operation.introspectionKeysOnly && !introspection) {
      metrics.rejected('introspection-key');
      throw new ForbiddenError(INTROSPECTION_KEY_MESSAGE);
    }
  };
}
