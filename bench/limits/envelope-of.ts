// What limits E′ enveloped and G write around E′'s checks, as the gateway writes it for every request:
// service-kit's request envelope as the gateway runs it (a request id of its own, X-Request-Id and the security
// headers, the deadline, one access line on stdout, which the harness sends to the limit's log file, the
// request metrics) and the key's quota in RateLimit-Policy and RateLimit (CONTRACT.md part 12), on
// service-kit's response class (the head written once).
import { type RequestListener, type Server, createServer } from 'node:http';
import { rateLimitHeaders } from '@platform/gateway/engine';
import { HeadResponse, createLogger, createMetrics, keepHeader, requestEnvelope } from '@platform/service-kit';
import type { Pass } from './checks-of.ts';
import { RATE } from './common.ts';

const POLICY = { name: 'default', ...RATE };

/** `pass` with the quota headers kept first. */
export function withQuota(pass: Pass): Pass {
  return (req, res, body, vouch) => {
    if (vouch?.quota !== undefined) {
      const quota = rateLimitHeaders(POLICY, vouch.quota);
      keepHeader(res, 'RateLimit-Policy', quota['RateLimit-Policy']);
      keepHeader(res, 'RateLimit', quota.RateLimit);
    }
    pass(req, res, body, vouch);
  };
}

/** A server running `handler` inside the gateway's envelope, its lines under `service`. */
export function envelopedServer(service: string, handler: RequestListener): Server {
  const logger = createLogger({ service, level: 'info' });
  const metrics = createMetrics(service, { collectDefault: true });
  // The gateway's REQUEST_DEADLINE_MS default.
  const envelope = requestEnvelope({ logger, metrics, deadlineMs: 8000, lifecycle: { draining: false } });
  return createServer({ ServerResponse: HeadResponse }, (req, res) => {
    // What the envelope and its line read the target from, as the gateway's front sets it.
    const request = Object.assign(req, { originalUrl: req.url ?? '/' });
    envelope(request as never, res as never, () => handler(req, res));
  });
}
