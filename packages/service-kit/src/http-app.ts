import type { IncomingMessage } from 'node:http';
import express, { type Express, type RequestHandler } from 'express';
import { type ErrorHandlerOptions, errorHandler, notFoundHandler } from '@platform/errors';
import { type Lifecycle, type ReadinessCheck, healthRouter } from './health.ts';
import type { RequestIdSource } from './http-logger.ts';
import type { Logger } from './logger.ts';
import type { Metrics } from './metrics.ts';
import { requestEnvelope } from './request-envelope.ts';

export interface BaseAppOptions {
  logger: Logger;
  metrics: Metrics;
  /** What `/health/ready` checks. */
  checks: readonly ReadinessCheck[];
  lifecycle: Lifecycle;
  /** The outer deadline of every request, after which it answers 503 (REQUEST_DEADLINE_MS); none when omitted. */
  requestDeadlineMs?: number;
  /** Serve `/metrics` here (default); false where it belongs on a management port only. */
  serveMetrics?: boolean;
  /**
   * The incoming X-Request-Id this process may take as the request's id (a service: the one the gateway's
   * assertion covers); omitted, every request gets an id of the process's own (the gateway, a management port).
   */
  requestIdFrom?: RequestIdSource;
  /** When a request must have been answered, or have changed nothing, by, as a caller this process trusts says (`requestEnvelope`'s `deadlineFrom`). */
  deadlineFrom?: (req: IncomingMessage) => number | undefined;
  /**
   * The request envelope to run, when the caller runs the same one elsewhere too (the gateway's API front,
   * ahead of this app); made from the options above when omitted.
   */
  envelope?: RequestHandler;
}

/**
 * The Express app every process starts from: request ids and one log line per request, metrics,
 * security headers, the request deadline, `/health/live`, `/health/ready` and `/metrics`. The caller
 * adds its own routes, then `finishApp`.
 */
export function createBaseApp(options: BaseAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  const operations = express.Router();
  options.metrics.watchDependencies(options.checks);
  operations.use(healthRouter({ checks: options.checks, lifecycle: options.lifecycle, logger: options.logger, onReadiness: options.metrics.readiness }));
  const serveMetrics = options.serveMetrics ?? true;
  if (serveMetrics) operations.use(options.metrics.router);
  app.use(
    inSequence([
      options.envelope ??
        requestEnvelope({
          logger: options.logger,
          metrics: options.metrics,
          requestIdFrom: options.requestIdFrom,
          deadlineMs: options.requestDeadlineMs,
          deadlineFrom: options.deadlineFrom,
          lifecycle: options.lifecycle,
        }),
      onlyUnder(serveMetrics ? OPERATIONS_PATHS : HEALTH_PATHS, operations),
    ]),
  );
  return app;
}

/** The paths of the health and metrics routers (case-insensitive, as Express routes by default). */
const OPERATIONS_PATHS = /^\/(health|metrics)(\/|$)/i;
const HEALTH_PATHS = /^\/health(\/|$)/i;

/**
 * An app for a management port: health and metrics only, everything else 404. For a process whose
 * public port must not show its metrics (the gateway, CONTRACT.md part 10).
 */
export function createManagementApp(options: Omit<BaseAppOptions, 'serveMetrics' | 'requestDeadlineMs'>): Express {
  return finishApp(createBaseApp({ ...options, serveMetrics: true }));
}

/**
 * An app for a metrics port: `GET /metrics` only, everything else 404. For a service whose API port also
 * serves its metrics, so that a NetworkPolicy can let Prometheus reach the metrics and nothing of the API
 * (identity's IDENTITY_METRICS_PORT, risk's RISK_METRICS_PORT).
 */
export function createMetricsApp(options: Pick<BaseAppOptions, 'logger' | 'metrics'>): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(requestEnvelope({ logger: options.logger }));
  app.use(onlyUnder(METRICS_PATH, options.metrics.router));
  return finishApp(app);
}

const METRICS_PATH = /^\/metrics(\/|$)/i;

/**
 * Middlewares run in order as one router layer: every layer of an Express app costs a dispatch and a few
 * allocations on every request, which for small middlewares was most of their price. As in Express, an
 * error passed to `next`, thrown, or a rejected promise skips the rest and goes to the error handlers.
 *
 * The throw is caught inside `step` itself, not around the first call: a middleware that finishes
 * asynchronously (a body parser) calls `step` from its own callback, where Express's layer no longer
 * catches, and a throw of the next middleware there would otherwise be uncaught and stop the process.
 */
export function inSequence(handlers: readonly RequestHandler[]): RequestHandler {
  return (req, res, next) => {
    let at = 0;
    const step = (err?: unknown): void => {
      if (err !== undefined && err !== null) {
        next(err);
        return;
      }
      const handler = handlers[at++];
      if (handler === undefined) {
        next();
        return;
      }
      try {
        const result: unknown = handler(req, res, step);
        if (result instanceof Promise) result.catch((error: unknown) => step(error ?? new Error('Rejected promise')));
      } catch (error) {
        step(error ?? new Error('Thrown without a value'));
      }
    };
    step();
  };
}

/** `handler` for requests whose path matches `paths`; every other request goes past it without a router dispatch. */
export function onlyUnder(paths: RegExp, handler: RequestHandler): RequestHandler {
  return (req, res, next) => {
    if (paths.test(req.path)) void handler(req, res, next);
    else next();
  };
}

/** Mounts the 404 handler and the error handler; call after every route. */
export function finishApp(app: Express, options?: ErrorHandlerOptions): Express {
  app.use(notFoundHandler);
  app.use(errorHandler(options));
  return app;
}
