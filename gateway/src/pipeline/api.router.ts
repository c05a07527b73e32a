import type { RequestHandler } from 'express';
import type { TokenVerifier } from '@platform/auth';
import { BadRequestError, MethodNotAllowedError } from '@platform/errors';
import { type Logger, nameServerSpan, requestLog, setRouteLabel } from '@platform/service-kit';
import { admit } from '../admission/admit.step.ts';
import type { AdmissionStore } from '../admission/admission.ts';
import { requireBearer, verifyBearer } from '../bearer/bearer.steps.ts';
import { idempotencyHeader } from '../idempotency/idempotency-header.step.ts';
import { forward } from '../proxy/forward.step.ts';
import { type GatewayOperation, type OperationTable, pathOf } from '../proxy/operation-table.ts';
import type { UpstreamName } from '../proxy/routes.ts';
import type { UpstreamClient } from '../proxy/upstream-client.ts';
import type { RateLimits } from '../rate-limit/rate-limits.ts';
import type { StationCache } from '../cache/station-cache.ts';
import { requireIntrospectionKey } from '../signing/introspection-key.step.ts';
import { verifySignature } from '../signing/signature.step.ts';
import type { SignatureVerifierOptions } from '../signing/verify-request.ts';
import { chain } from './chain.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import { readBody } from './read-body.step.ts';

export interface ApiRouterOptions {
  /** The allow-list: the operations of the merged API document. */
  operations: OperationTable;
  /** One client per upstream. */
  upstreams: Readonly<Record<UpstreamName, UpstreamClient>>;
  bodyLimitBytes: number;
  signatures: SignatureVerifierOptions;
  /** GATEWAY_RATE_LIMITS (CONTRACT.md part 12). */
  rateLimits: RateLimits;
  tokens: TokenVerifier;
  /** TOKEN_BINDING=on: a bearer token bound to another client key than the request's is refused (CONTRACT.md part 16). */
  tokenBinding: boolean;
  admission: AdmissionStore;
  metrics: GatewayMetrics;
  logger: Logger;
  trustedProxyHops: number;
  /** INTERNAL_ASSERTION_KEY (CONTRACT.md part 10). */
  assertionKey: string;
  /** The station cache (CONTRACT.md part 17) for risk's operations; none when GATEWAY_CACHE_MB is 0. */
  stationCache?: StationCache;
}

/** A documented operation's chain, and its path template (the route label and span name). */
export interface OperationChain {
  template: string;
  handle: RequestHandler;
}

/** The `/v1` routes: as an Express handler, and each operation's chain for the API front (api-front.ts). */
export interface ApiRoutes {
  /**
   * Every request Express routes here: a fragment is a 400, a documented path with another method a 405
   * with `Allow`, any other path goes on to the 404, and a documented operation runs its chain.
   */
  router: RequestHandler;
  /** The chain of the documented operation of `method` on `target` (path and query), or undefined. */
  chainOf(method: string, target: string): OperationChain | undefined;
}

/**
 * The documented operations (CONTRACT.md part 8). Every one goes through the same chain, in CONTRACT.md
 * part 3 and 12 order; the first step that refuses answers:
 *
 *   idempotencyHeader → readBody → verifySignature → verifyBearer → admit → requireBearer → requireIntrospectionKey → forward
 *
 * `admit` is the admission in Redis (admission/admission.ts: scripts of one slot each): the 429, the 409s, the Redis-loss answers.
 * The idempotency key is released in one place, by one rule (chain.ts, `keepsIdempotencyKey`). A
 * documented path with another method answers 405 with `Allow`; any other path is left to the 404
 * handler; a target with a fragment (`#`) answers 400. None is ever proxied.
 */
export function apiRouter(options: ApiRouterOptions): ApiRoutes {
  const { metrics, logger } = options;
  const steps = [
    idempotencyHeader(metrics),
    readBody(options.bodyLimitBytes, metrics),
    verifySignature(options.signatures, options.rateLimits, metrics, logger),
    verifyBearer(options.tokens),
    admit(options.admission, metrics, logger),
    requireBearer(metrics, options.tokenBinding),
    requireIntrospectionKey(metrics),
  ];
  const forwardTo = (operation: GatewayOperation) =>
    forward(options.upstreams[operation.upstream], {
      metrics,
      trustedProxyHops: options.trustedProxyHops,
      assertionKey: options.assertionKey,
      // Every risk operation is a station lookup (CONTRACT.md part 17).
      cache: operation.upstream === 'risk' ? options.stationCache : undefined,
    });
  const release = chainRelease(options);
  const chains = new Map(
    options.operations.operations.map((operation): [GatewayOperation, OperationChain] => [
      operation,
      { template: operation.template, handle: chain(operation, steps, forwardTo(operation), release) },
    ]),
  );
  const chainFor = (operation: GatewayOperation): OperationChain => {
    const found = chains.get(operation);
    if (found === undefined) throw new Error(`no chain for ${operation.method} ${operation.template}`);
    return found;
  };
  const chainOf = (method: string, target: string): OperationChain | undefined => {
    const operation = options.operations.match(method, pathOf(target))?.operation;
    return operation === undefined ? undefined : chainFor(operation);
  };
  const router: RequestHandler = (req, res, next) => {
    // A fragment is never sent to a server (RFC 9110 section 7.1): a target with one would be routed here on
    // a path the service, which drops it, does not see. Refused, so both sides see the same path.
    if (req.originalUrl.includes('#')) {
      metrics.rejected('fragment');
      next(new BadRequestError('The request target must not contain a fragment (#)'));
      return;
    }
    const match = options.operations.match(req.method, pathOf(req.originalUrl));
    if (match === undefined) {
      if (req.originalUrl.startsWith('/v1/')) metrics.rejected('unknown-operation');
      next();
      return;
    }
    setRouteLabel(req, match.template);
    // Trace views tell operations apart by the documented route, as the services' spans are named.
    nameServerSpan(req.method, match.template);
    if (match.operation === undefined) {
      metrics.rejected('method-not-allowed');
      next(new MethodNotAllowedError(req.method, match.allow));
      return;
    }
    chainFor(match.operation).handle(req, res, next);
  };
  return { router, chainOf };
}

/**
 * Frees a request's idempotency key (chain.ts decides when); the answer stands whatever happens. A release that
 * fails (Redis down: every 503 then) is the store's to send again, and to tell once per outage; the request's
 * own line is a debug one, with its reason and no stack.
 */
function chainRelease(options: ApiRouterOptions): Parameters<typeof chain>[3] {
  return (request) => {
    options.admission.release({ keyId: request.keyId, idempotencyKey: request.idempotencyKey, owner: request.owner }).catch((err: unknown) => {
      const reason = err instanceof Error ? err.message : String(err);
      requestLog(request.req, options.logger).debug({ reason, keyId: request.keyId }, 'could not release the idempotency key after a 5xx yet; it is released once Redis answers');
    });
  };
}
