// Limit E′ enveloped: limit E′ (lean-checks.ts) writing what the gateway must write for every request besides
// forwarding it: service-kit's request envelope as the gateway runs it (a request id of its own, X-Request-Id
// and the security headers, the deadline, one access line on stdout, which the harness sends to the limit's
// log file, the request metrics), the key's quota in RateLimit-Policy and RateLimit (CONTRACT.md part 12),
// its request id and a `traceparent` upstream; on service-kit's response class, the head written once. The
// gateway's distance to it is what its own pipeline costs (the operation table, the chain's steps, the
// forwarding's error paths), not the contract's output.
// Usage: node bench/limits/enveloped-checks.ts (the options of checks.ts)
import { createServer } from 'node:http';
import { rateLimitHeaders } from '@platform/gateway/engine';
import { HeadResponse, createLogger, createMetrics, formatTraceparent, keepHeader, requestEnvelope, requestTrace } from '@platform/service-kit';
import { checkedHandler, checksOf } from './checks-of.ts';
import { RATE, checkedUpstreamHeaders, limitOptions, listen, undiciForwarder } from './common.ts';

const options = limitOptions('enveloped-checks', ['target', 'redisUrl', 'keySecret', 'redisPrefix', 'jwksUrl', 'issuer']);
const POLICY = { name: 'default', ...RATE };
const logger = createLogger({ service: 'limit-e-enveloped', level: 'info' });
const metrics = createMetrics('limit-e-enveloped', { collectDefault: true });
// The gateway's REQUEST_DEADLINE_MS default.
const envelope = requestEnvelope({ logger, metrics, deadlineMs: 8000, lifecycle: { draining: false } });
const { forward } = undiciForwarder(options.target);
const checked = checkedHandler(checksOf(options), (req, res, body, vouch) => {
  if (vouch?.quota !== undefined) {
    const quota = rateLimitHeaders(POLICY, vouch.quota);
    keepHeader(res, 'RateLimit-Policy', quota['RateLimit-Policy']);
    keepHeader(res, 'RateLimit', quota.RateLimit);
  }
  const headers = checkedUpstreamHeaders(req, body, vouch === undefined ? undefined : { ...vouch, requestId: req.id ?? vouch.requestId });
  headers.traceparent = formatTraceparent(requestTrace(req));
  forward(req, res, headers, body.length === 0 ? null : body);
});
const server = createServer({ ServerResponse: HeadResponse }, (req, res) => {
  // What the envelope and its line read the target from, as the gateway's front sets it.
  const request = Object.assign(req, { originalUrl: req.url ?? '/' });
  envelope(request as never, res as never, () => checked(req, res));
});
listen(server, options.port);
