import type { ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { answerBudgetMs, formatTraceparent, requestTrace } from '@platform/service-kit';
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
 * before the gateway gives up on it (`waitMs` from now: its 504, `timeoutMs` of silence, or its own request
 * deadline's 503, whichever comes first), by a margin for a commit under way then, the answer's way back and
 * the hosts' clocks (NTP keeps them within milliseconds): a fifth of that wait, at most 1 s.
 */
export function serviceDeadline(sentAtMs: number, waitMs: number): number {
  return Math.floor(sentAtMs + waitMs - Math.min(1000, waitMs / 5));
}

/**
 * Step 7: the admitted request to its upstream, with the allow-listed client headers and the gateway's own
 * (X-Request-Id, X-Forwarded-*, the client key id under the internal assertion, the trace context).
 * Resolves with the status that decides the idempotency key (`decisive`): the upstream's, or the one already
 * sent when the request deadline answered first and the upstream then refused, failed or never answered.
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
      // Made just before it is sent; a request whose body came slowly has less of the gateway's own deadline left.
      deadlineAtMs: serviceDeadline(Date.now(), Math.min(upstream.timeoutMs, answerBudgetMs())),
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
      return typeof status === 'number' ? status : status.then((settled) => decisive(res, settled), (err: unknown) => failed(res, err));
    } catch (err) {
      return failed(res, err);
    }
  };
}

/**
 * The status that decides the idempotency key: the upstream's, unless the deadline's 503 went out first and
 * the upstream then refused or failed (4xx, 5xx). A late success keeps the key, since the change was made and a
 * retry must not make it twice; a late refusal changed nothing a retry would wrongly repeat, so the client's
 * 503 frees the key for the retry it invites, which then gets the refusal itself.
 */
function decisive(res: ServerResponse, upstream: number): number {
  const deadlineFirst = res.headersSent && res.statusCode !== upstream;
  return deadlineFirst && upstream >= 400 ? res.statusCode : upstream;
}

/** A failure after the deadline's answer went out: the client has that, and it decides; else the failure is the answer's. */
function failed(res: ServerResponse, err: unknown): number {
  if (res.headersSent) return res.statusCode;
  throw err;
}
