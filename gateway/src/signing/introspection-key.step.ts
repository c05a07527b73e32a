import { INTROSPECTION_KEY_MESSAGE } from '@platform/auth';
import { ForbiddenError } from '@platform/errors';
import type { Step } from '../pipeline/chain.ts';
import type { GatewayMetrics } from '../pipeline/gateway-metrics.ts';

/**
 * After admission: introspection tells which tokens are alive, so only the resource servers' keys (their
 * entry says `"introspection": true`) reach it (CONTRACT.md part 16); another key's valid request answers 403.
 * After admission, as every refusal of a verified key's request: its nonce is spent (a replay is a 409), and
 * it counts against the key's rate limit and carries its `RateLimit` headers (parts 2 and 12).
 */
export function requireIntrospectionKey(metrics: GatewayMetrics): Step {
  return (request) => {
    if (request.operation.introspectionKeysOnly && !request.mayIntrospect) {
      metrics.rejected('introspection-key');
      throw new ForbiddenError(INTROSPECTION_KEY_MESSAGE);
    }
  };
}
