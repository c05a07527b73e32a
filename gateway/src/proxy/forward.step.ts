import type { ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { formatTraceparent, requestTrace } from '@platform/service-kit';
import type { Forward } from '../pipeline/chain.ts';
import type { GatewayRequest } from '../pipeline/gateway-request.ts';
import type { GatewayMetrics } from '../pipeline/gateway-metrics.ts';
import { clientOrigin, upstreamRequestHeaders } from './forwarded-headers.ts';
import { pathOf } from './operation-table.ts';
import type { UpstreamClient, UpstreamExchange, UpstreamOutcome } from './upstream-client.ts';
import { forwardThroughCache } from '../cache/cached-forward.ts';
import type { StationCache } from '../cache/station-cache.ts';

export interface ForwardOptions {
  metrics: GatewayMetrics;
  /** The station cache (CONTRACT.md part 17), for an upstream whose answers it keeps; none when GATEWAY_CACHE_MB is 0. */
  cache?: StationCache;
  trustedProxyHops: number;
  /** INTERNAL_ASSERTION_KEY (CONTRACT.md part 10). */
  assertionKey: string;
}

/**
 * When the service must have answered a request sent at `sentAtMs`, or changed nothing (the assertion's `d`):
 * before the gateway's 504 (`timeoutMs` of silence), by a margin for a commit under way then, the answer's way
 * back and the hosts' clocks (NTP keeps them within milliseconds): a fifth of the timeout, at most 1 s.
 */
export function serviceDeadline(sentAtMs: number, timeoutMs: number): number {
  return sentAtMs + timeoutMs - Math.min(1000, Math.floor(timeoutMs / 5));
}

/**
 * Step 7: the admitted request to its upstream, with the allow-listed client headers and the gateway's own
 * (X-Request-Id, X-Forwarded-*, the client key id under the internal assertion, the trace context).
 * Resolves with the status the client gets: the upstream's, or the one already sent when the request
 * deadline answered first.
 */
export function forward(upstream: UpstreamClient, options: ForwardOptions): Forward {
  const cached =
    options.cache === undefined
      ? undefined
      : {
          cache: options.cache,
          upstream,
          timer: () => {
            const timer = options.metrics.upstreamTimer(upstream.name);
            return (outcome: UpstreamOutcome) => timer(String(outcome));
          },
        };
  /** The request as it goes upstream: built only when it does (a cached hit needs neither headers nor assertion). */
  const exchangeOf = (request: GatewayRequest): UpstreamExchange => {
    const { req } = request;
    // Without the SDK the gateway continues the trace itself; with it, the HTTP instrumentation does.
    const trace = requestTrace(req);
    const origin = clientOrigin({ remoteAddress: req.socket.remoteAddress, encrypted: (req.socket as TLSSocket).encrypted === true }, req.headers, options.trustedProxyHops);
    const headers = upstreamRequestHeaders(req.headers, {
      // The gateway's own (it never takes a client's), as its answer and its log line carry it.
      requestId: req.id ?? '',
      keyId: request.keyId,
      clientAddress: origin.address,
      proto: origin.proto,
      method: req.method,
      target: req.originalUrl,
      bodyLength: request.body.length,
      assertionKey: options.assertionKey,
      traceparent: trace.fromSdk ? undefined : formatTraceparent(trace),
      // Admission read the token's revocation keys and found none (else this request would not be here).
      checkedBearer: request.bearer.principal !== undefined && request.admission?.outcome === 'claimed',
      // Made just before it is sent.
      deadlineAtMs: serviceDeadline(Date.now(), upstream.timeoutMs),
    });
    return { method: req.method, target: req.originalUrl, headers, body: request.body, path: pathOf(req.originalUrl) };
  };
  return (request) => {
    const { res } = request;
    try {
      let status: number | Promise<number>;
      if (cached !== undefined) {
        status = forwardThroughCache(cached, request, () => exchangeOf(request));
      } else {
        const timer = options.metrics.upstreamTimer(upstream.name);
        status = upstream.send(exchangeOf(request), res, (outcome) => timer(String(outcome)));
      }
      // A cached hit answered at once: no promise for it.
      return typeof status === 'number' ? answered(res, status) : status.then((settled) => answered(res, settled), (err: unknown) => failed(res, err));
    } catch (err) {
      return failed(res, err);
    }
  };
}

/** The status the client got: the deadline's, when its answer went out first. */
function answered(res: ServerResponse, status: number): number {
  return res.headersSent && res.statusCode !== status ? res.statusCode : status;
}

/** A failure after the deadline's answer went out: the client has that, and it decides; else the failure is the answer's. */
function failed(res: ServerResponse, err: unknown): number {
  if (res.headersSent) return res.statusCode;
  throw err;
}
