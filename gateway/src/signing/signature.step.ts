import { UnauthorizedError } from '@platform/errors';
import { type Logger, requestLog } from '@platform/service-kit';
import type { Step } from '../pipeline/chain.ts';
import type { GatewayMetrics } from '../pipeline/gateway-metrics.ts';
import type { RateLimits } from '../rate-limit/rate-limits.ts';
import { SignatureFault } from './signature-fault.ts';
import { type SignatureVerifierOptions, verifyRequestSignature } from './verify-request.ts';

/**
 * Step 3: the RFC 9421 signature over the request and its body (CONTRACT.md part 2). Any fault → 401
 * `Invalid request signature`; the precise reason goes to the log only. Names the client key, with the rate
 * limit that admission counts against and whether it may introspect (`requireIntrospectionKey` judges that
 * after admission).
 */
export function verifySignature(options: SignatureVerifierOptions, rateLimits: RateLimits, metrics: GatewayMetrics, logger: Logger): Step {
  return (request) => {
    const { req } = request;
    try {
      const verified = verifyRequestSignature({ method: req.method, target: req.originalUrl, authority: req.headers.host, headers: req.headers }, request.body, options);
      request.keyId = verified.keyId;
      request.nonce = verified.nonce;
      request.created = verified.created;
      request.policy = rateLimits.policyFor(verified.keyId);
      request.mayIntrospect = verified.introspection;
    } catch (err) {
      if (!(err instanceof SignatureFault)) throw err;
      metrics.rejected('signature');
      requestLog(req, logger).warn({ reason: err.message }, 'request signature rejected');
      throw new UnauthorizedError('Invalid request signature', { cause: err });
    }
  };
}
