import type { GatewayMetrics } from '../pipeline/gateway-metrics.ts';
import type { Step } from '../pipeline/chain.ts';
import { idempotencyKeyOf } from './idempotency-key.ts';

/** Step 1: `X-Idempotency-Key` present and well-formed (CONTRACT.md part 3), else 400 before the body is read. */
export function idempotencyHeader(metrics: GatewayMetrics): Step {
  return (request) => {
    try {
      request.idempotencyKey = idempotencyKeyOf(request.req.headers['x-idempotency-key']);
    } catch (err) {
      metrics.rejected('idempotency-key-missing');
      throw err;
    }
  };
}
