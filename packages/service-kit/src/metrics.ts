import type { Request, RequestHandler, Router } from 'express';
import express from 'express';
import { methodNotAllowedHandler } from '@platform/errors';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** A process's Prometheus registry and the HTTP middleware that feeds it. */
export interface Metrics {
  registry: Registry;
  /** Counts and times every request by method, route template and status. */
  middleware: RequestHandler;
  /** `GET /metrics` in the Prometheus text format. */
  router: Router;
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
  const openapiRoute = (req as { openapi?: { openApiRoute?: string } }).openapi?.openApiRoute;
  if (openapiRoute) return openapiRoute;
  const routePath = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof routePath === 'string') return `${req.baseUrl}${routePath}`;
  return 'unmatched';
}

export interface MetricsOptions {
  /** Also collect the process metrics (CPU, memory, event loop lag, GC). Off in tests that build many apps. */
  collectDefault?: boolean;
}

/** Creates a registry with the request counter and latency histogram of every process. */
export function createMetrics(service: string, options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  if (options.collectDefault) collectDefaultMetrics({ register: registry });

  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route template and status',
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving a request to finishing its answer, by method, route template and status',
    labelNames,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });

  const middleware: RequestHandler = (req, res, next) => {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const labels = { method: req.method, route: routeLabel(req), status: String(res.statusCode) };
      requests.inc(labels);
      duration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };

  const router = express.Router();
  router
    .route('/metrics')
    .get(async (_req, res) => {
      res.type(registry.contentType).send(await registry.metrics());
    })
    .all(methodNotAllowedHandler);

  return { registry, middleware, router };
}
