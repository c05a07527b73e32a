import type { RequestListener } from 'node:http';
import type { Express } from 'express';
import { createRevocationReader, createTokenVerifier, jwksKeySource } from '@platform/auth';
import type { ErrorHandlerOptions } from '@platform/errors';
import {
  type Lifecycle,
  type Logger,
  type Metrics,
  type OpenApiDocument,
  type Redis,
  createBaseApp,
  createManagementApp,
  finishApp,
  inSequence,
  onlyUnder,
  redisCheck,
  requestEnvelope,
} from '@platform/service-kit';
import type { GatewayConfig } from './config.ts';
import { createAdmissionStore } from './admission/admission.ts';
import { cors } from './cors/cors.ts';
import { discoveryHandler } from './discovery/discovery.routes.ts';
import { docsRouter } from './docs/docs.routes.ts';
import { apiFront } from './pipeline/api-front.ts';
import { apiRouter } from './pipeline/api.router.ts';
import { createGatewayMetrics } from './pipeline/gateway-metrics.ts';
import { operationTable, pathOf } from './proxy/operation-table.ts';
import { type UpstreamRoute, isUnder, upstreamRoutes } from './proxy/routes.ts';
import { createStationCache } from './cache/station-cache.ts';
import { createUpstreamClient } from './proxy/upstream-client.ts';
import { type KeyLookup, verificationKeys } from './signing/verification-keys.ts';
import { idempotencyKeyLifetimeS, nonceLifetimeS } from './signing/signature-policy.ts';

/** The paths of the docs router (case-insensitive, as Express routes by default). */
const DOCS_PATHS = /^\/(openapi\.json|docs)(\/|$)/i;
/** Where the discovery documents are; the handler leaves the other well-known paths to the 404. */
const WELL_KNOWN_PATHS = /^\/\.well-known\//;

/** Everything the gateway app needs, made by the composition root (or by a test). */
export interface GatewayDeps {
  config: GatewayConfig;
  logger: Logger;
  redis: Redis;
  metrics: Metrics;
  lifecycle: Lifecycle;
  /** The merged API document: the operations the gateway proxies, served at /openapi.json and /docs. */
  apiDocument: OpenApiDocument;
  /** The live keys of GATEWAY_CLIENT_KEYS_FILE; GATEWAY_CLIENT_KEYS' when omitted. */
  clientKeys?: KeyLookup;
  /** The key ids of `clientKeys` (GATEWAY_CLIENT_KEYS_FILE's, as they change); GATEWAY_CLIENT_KEYS's when omitted. */
  clientKeyIds?: () => readonly string[];
}

/** The gateway app and what must be closed with it. */
export interface Gateway {
  /**
   * The public port's request listener: the API, docs and health, never the metrics. The documented
   * operations are dispatched ahead of Express (api-front.ts); the Express app answers everything else.
   */
  app: RequestListener;
  /** The management port's app: metrics and health (CONTRACT.md part 10). */
  management: Express;
  /**
   * Dates the ledgers of the client keys that have none (a new environment, new keys), then waits out the
   * second of that date, so that no request signed in it meets it: before listening (CONTRACT.md part 12:
   * a key never used is not a loss). Rejects when Redis does not answer (the gateway dates them later).
   */
  prepare: () => Promise<void>;
  /** Closes the upstream connection pools (after the server drained), stops watching Redis and the token keys. */
  close: () => Promise<void>;
}

/**
 * Builds the gateway's two apps, public and management. It never listens: index.ts or a test does.
 * Readiness follows Redis because the gateway fails closed without it (CONTRACT.md part 3). Client keys
 * become key objects here, once, and the API document the table of the operations proxied (part 8).
 */
export function createGateway(deps: GatewayDeps): Gateway {
  const { config, logger } = deps;
  // The revocations as this gateway reads them, watching Redis's servers: a bucket whose server was replaced
  // (perhaps by a replica that lagged) waits for identity's re-seed (CONTRACT.md parts 13 and 14).
  const revocations = createRevocationReader(deps.redis, { logger });
  const admission = createAdmissionStore(deps.redis, {
    nonceTtlS: nonceLifetimeS(config.SIGNATURE_MAX_SKEW_S),
    safeTtlS: idempotencyKeyLifetimeS(config.IDEMPOTENCY_TTL_SAFE_S, config.SIGNATURE_MAX_SKEW_S),
    unsafeTtlS: idempotencyKeyLifetimeS(config.IDEMPOTENCY_TTL_UNSAFE_S, config.SIGNATURE_MAX_SKEW_S),
    revocations,
    // Each client key's replay store is dated when the gateway learns of the key, not by its first request.
    keyIds: deps.clientKeyIds ?? (() => config.GATEWAY_CLIENT_KEYS.map((key) => key.keyId)),
    logger,
  });
  const checks = [redisCheck(deps.redis)];
  // Station answers kept after every check (CONTRACT.md part 17); their generation read from Redis.
  const stationCache = config.GATEWAY_CACHE_MB === 0 ? undefined : createStationCache({ maxBytes: config.GATEWAY_CACHE_MB * 1024 * 1024, redis: deps.redis, metrics: deps.metrics, logger });
  stationCache?.start();
  const base = {
    logger,
    metrics: deps.metrics,
    checks,
    lifecycle: deps.lifecycle,
    requestDeadlineMs: config.REQUEST_DEADLINE_MS,
  };
  // One envelope for the app and the API front (api-front.ts), which runs it ahead of the app.
  const envelope = requestEnvelope({ logger, metrics: deps.metrics, deadlineMs: base.requestDeadlineMs, lifecycle: deps.lifecycle });
  // What the gateway counts is for the operators, not for its clients (CONTRACT.md part 10).
  const app = createBaseApp({ ...base, serveMetrics: false, envelope });
  const routes = upstreamRoutes({ identity: config.IDENTITY_URL, risk: config.RISK_URL });
  // Station error bodies always carry `messages` (CONTRACT.md part 7), the gateway's own answers too.
  const proxyTo = (route: UpstreamRoute) =>
    createUpstreamClient({ name: route.name, target: route.url, timeoutMs: config.UPSTREAM_TIMEOUT_MS, alwaysMessages: route === routes.risk });
  const upstreams = { identity: proxyTo(routes.identity), risk: proxyTo(routes.risk) };
  // Re-validated every JWKS_REFRESH_MS from the first bearer request (or request for the published keys)
  // on: a key identity withdrew (a leaked one) stops verifying here, and is no longer published, within
  // seconds, not when the cached set ages out.
  const tokenKeys = jwksKeySource({
    url: config.IDENTITY_JWKS_URL,
    refreshIntervalMs: config.JWKS_REFRESH_MS,
    onError: (err) => logger.warn({ err }, 'could not fetch the token keys (JWKS)'),
  });
  const tokens = createTokenVerifier({
    keys: tokenKeys,
    issuer: config.TOKEN_ISSUER,
    audience: config.JWT_AUDIENCE,
  });
  const api = apiRouter({
    operations: operationTable(deps.apiDocument, Object.values(routes)),
    upstreams,
    bodyLimitBytes: config.GATEWAY_BODY_LIMIT_BYTES,
    signatures: { keys: deps.clientKeys ?? verificationKeys(config.GATEWAY_CLIENT_KEYS), maxSkewS: config.SIGNATURE_MAX_SKEW_S },
    rateLimits: config.GATEWAY_RATE_LIMITS,
    tokens,
    tokenBinding: config.TOKEN_BINDING === 'on',
    admission,
    metrics: createGatewayMetrics(deps.metrics),
    logger,
    trustedProxyHops: config.TRUSTED_PROXY_HOPS,
    assertionKey: config.INTERNAL_ASSERTION_KEY,
    stationCache,
  });
  // One Express layer for the four: every layer costs each request a dispatch and its allocations
  // (issue 27); inSequence runs them in order, as layers would, errors included.
  app.use(
    inSequence([
      cors(config.CORS_ORIGINS),
      onlyUnder(DOCS_PATHS, docsRouter(deps.apiDocument)),
      // Unsigned, before the API's checks: the keys published are the very ones the tokens are verified with.
      onlyUnder(WELL_KNOWN_PATHS, discoveryHandler({ issuer: config.TOKEN_ISSUER, keys: tokenKeys })),
      api.router,
    ]),
  );
  // Station error bodies always carry `messages` (CONTRACT.md part 7), the gateway's own answers too.
  const errors: ErrorHandlerOptions = { messages: (req) => isUnder(routes.risk, pathOf(req.originalUrl)) };
  const express = finishApp(app, errors);
  const front = apiFront({ routes: api, envelope, corsOrigins: config.CORS_ORIGINS, errors });
  return {
    app: (req, res) => {
      if (!front(req, res)) express(req, res);
    },
    management: createManagementApp({ logger, metrics: deps.metrics, checks, lifecycle: deps.lifecycle }),
    prepare: async () => {
      const dated = await admission.dateKeys();
      if (dated > 0) await new Promise((resolve) => setTimeout(resolve, (Math.floor(dated / 1000) + 1) * 1000 - Date.now()));
    },
    close: async () => {
      tokenKeys.close();
      upstreams.identity.close();
      upstreams.risk.close();
      await Promise.all([admission.stop(), revocations.stop(), stationCache?.stop()]);
    },
  };
}
