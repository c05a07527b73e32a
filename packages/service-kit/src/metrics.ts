import type { Request, Router } from 'express';
import express from 'express';
import { methodNotAllowedHandler } from '@platform/errors';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { type ReadinessCheck, withTimeout } from './health.ts';
import { openApiRouteOf } from './openapi-route.ts';
import { SeriesHistogram } from './series-histogram.ts';

/** A process's Prometheus registry and the HTTP middleware that feeds it. */
export interface Metrics {
  registry: Registry;
  /**
   * Counts and times one finished answer by method, route template and status, except probes and scrapes:
   * the request envelope (request-envelope.ts) calls it from its one `close` hook.
   */
  observeRequest(req: Request, status: number, seconds: number): void;
  /** `GET /metrics` in the Prometheus text format. */
  router: Router;
  /** What a readiness probe answered: `process_ready`, and a change counted in `readiness_changes_total`. */
  readiness(ready: boolean): void;
  /**
   * Adds dependencies for `dependency_up`, checked at every scrape: the readiness checks, and any a
   * composition root adds (a database the process can serve without, as risk serves from its index).
   */
  watchDependencies(checks: readonly ReadinessCheck[]): void;
}

/** How long a dependency may take to answer at a scrape before it counts as down (a readiness probe's limit). */
const DEPENDENCY_TIMEOUT_MS = 1000;

async function answers(check: ReadinessCheck): Promise<boolean> {
  return await withTimeout(check.check(), DEPENDENCY_TIMEOUT_MS).then(
    () => true,
    () => false,
  );
}

/** Where a router that is not Express's own leaves the route template of a request. */
const ROUTE_LABEL = Symbol('route label');

/** Names the route template of `req` for the request metrics, for routing that Express does not see. */
export function setRouteLabel(req: Request, template: string): void {
  (req as Request & { [ROUTE_LABEL]?: string })[ROUTE_LABEL] = template;
}

/**
 * The route template of a request (`/v1/accounts/{userId}`), never the raw path: raw paths would give
 * every id its own time series. Requests no route took are counted under `unmatched`.
 */
function routeLabel(req: Request): string {
  const labelled = (req as Request & { [ROUTE_LABEL]?: string })[ROUTE_LABEL];
  if (labelled !== undefined) return labelled;
  const openapiRoute = openApiRouteOf(req);
  if (openapiRoute !== undefined) return openapiRoute;
  const routePath = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof routePath === 'string') return `${req.baseUrl}${routePath}`;
  return 'unmatched';
}

/**
 * The routes of health probes and metric scrapes. They are not traffic: the kubelet's probes alone would
 * pass the error-ratio alert's traffic guard, page every dependency outage as a 5xx ratio with no user
 * behind it, and dilute the real ratio; readiness has its own series (`process_ready`,
 * `readiness_changes_total`).
 */
const OPERATIONS_ROUTES: ReadonlySet<string> = new Set(['/health/live', '/health/ready', '/metrics']);

export interface MetricsOptions {
  /** Also collect the process metrics (CPU, memory, event loop lag, GC). Off in tests that build many apps. */
  collectDefault?: boolean;
}

/** Creates a registry with the request counter and latency histogram of every process. */
export function createMetrics(service: string, options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  if (options.collectDefault) collectDefaultMetrics({ register: registry });

  const duration = new SeriesHistogram(
    'http_request_duration_seconds',
    'Time from receiving a request to finishing its answer, by method, route template and status',
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registry,
  );
  duration.countedAs('http_requests_total', 'HTTP requests answered, by method, route template and status', registry);

  // Each method, route and status's series found by a string key, its labels made once.
  const series = new Map<string, (seconds: number) => void>();
  const observeRequest = (req: Request, status: number, seconds: number): void => {
    const route = routeLabel(req);
    const key = `${req.method} ${status} ${route}`;
    let observe = series.get(key);
    if (observe === undefined) {
      if (OPERATIONS_ROUTES.has(route)) return;
      observe = duration.series(key, { method: req.method, route, status: String(status) });
      series.set(key, observe);
    }
    observe(seconds);
  };

  // Health as numbers, for dashboards and alerts: probes flapping, Redis or Postgres unreachable.
  const ready = new Gauge({ name: 'process_ready', help: '1 when the last readiness probe answered ready, 0 when not', registers: [registry] });
  const readinessChanges = new Counter({
    name: 'readiness_changes_total',
    help: 'Times the readiness probe\'s answer flipped between ready and not ready',
    registers: [registry],
  });
  let lastReady: boolean | undefined;
  const dependencies = new Map<string, ReadinessCheck>();
  new Gauge({
    name: 'dependency_up',
    help: 'Whether a dependency (redis, postgres) answered its check at this scrape (1) or not within 1 s (0)',
    labelNames: ['dependency'],
    registers: [registry],
    async collect() {
      this.reset();
      const results = await Promise.all([...dependencies.values()].map(async (check) => [check.name, await answers(check)] as const));
      for (const [name, up] of results) this.set({ dependency: name }, up ? 1 : 0);
    },
  });

  const router = express.Router();
  router
    .route('/metrics')
    .get(async (_req, res) => {
      res.type(registry.contentType).send(await registry.metrics());
    })
    .all(methodNotAllowedHandler);

  return {
    registry,
    observeRequest,
    router,
    readiness: (isReady) => {
      ready.set(isReady ? 1 : 0);
      if (lastReady !== undefined && lastReady !== isReady) readinessChanges.inc();
      lastReady = isReady;
    },
    watchDependencies: (checks) => {
      for (const check of checks) dependencies.set(check.name, check);
    },
  };
}
