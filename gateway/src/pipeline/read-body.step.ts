import express from 'express';
import type { Step } from './chain.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';

/**
 * Step 2: the body, read whole. The digest must be checked against the bytes received, and those bytes are
 * what is forwarded: up to `limitBytes` (else 413). `inflate: false`: a compressed body would be verified
 * and forwarded as something other than what was signed, so it is refused (415).
 */
export function readBody(limitBytes: number, metrics: GatewayMetrics): Step {
  const raw = express.raw({ type: () => true, limit: limitBytes, inflate: false });
  return (request) =>
    new Promise<void>((resolve, reject) => {
      raw(request.req, request.res, (err?: unknown) => {
        if (err !== undefined && err !== null) {
          if ((err as { type?: unknown }).type === 'entity.too.large') metrics.rejected('body-too-large');
          reject(err);
          return;
        }
        const body: unknown = request.req.body;
        if (Buffer.isBuffer(body)) request.body = body;
        resolve();
      });
    });
}
