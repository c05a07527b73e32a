import express, { type Router } from 'express';
import { ServiceUnavailableError, methodNotAllowedHandler } from '@platform/errors';
import type { Logger } from './logger.ts';

/** A dependency the process needs in order to serve: checked on every readiness probe. */
export interface ReadinessCheck {
  /** Short name shown in the probe's answer (`postgres`, `redis`). */
  name: string;
  /** Resolves when the dependency answers; rejects (or outlasts the timeout) when it does not. */
  check: () => Promise<void>;
}

/** Whether the process is draining for shutdown; a draining process is live but not ready. */
export interface Lifecycle {
  draining: boolean;
}

export interface HealthOptions {
  checks: readonly ReadinessCheck[];
  lifecycle: Lifecycle;
  logger: Logger;
  /** How long one check may take before it counts as down. */
  timeoutMs?: number;
  /** Told every probe's answer (the metrics' `process_ready`). */
  onReadiness?: (ready: boolean) => void;
}

/** `promise`, or a rejection (`fault`'s error) after `ms` if it has not settled by then (it goes on either way). */
export function withTimeout<T>(promise: Promise<T>, ms: number, fault: () => Error = () => new Error(`no answer within ${ms} ms`)): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(fault()), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * `GET /health/live` (the process runs) and `GET /health/ready` (it can serve: every dependency answers
 * and it is not draining). A failing probe is a 503 in the error shape naming each failing dependency;
 * the reason it failed goes to the log only, since probes should not describe the infrastructure.
 */
export function healthRouter(options: HealthOptions): Router {
  const timeoutMs = options.timeoutMs ?? 1000;
  const router = express.Router();
  router
    .route('/health/live')
    .get((_req, res) => {
      res.json({ status: 'live' });
    })
    .all(methodNotAllowedHandler);
  router.route('/health/ready').get(async (_req, res) => {
    if (options.lifecycle.draining) {
      options.onReadiness?.(false);
      throw new ServiceUnavailableError('Not ready: shutting down');
    }
    const results = await Promise.all(
      options.checks.map(async ({ name, check }) => {
        try {
          await withTimeout(check(), timeoutMs);
          return { name, up: true };
        } catch (err) {
          options.logger.warn({ dependency: name, reason: err instanceof Error ? err.message : String(err) }, 'readiness check failed');
          return { name, up: false };
        }
      }),
    );
    const down = results.filter((r) => !r.up).map((r) => r.name);
    options.onReadiness?.(down.length === 0);
    if (down.length > 0) {
      throw new ServiceUnavailableError(`Not ready: ${down.join(', ')} unreachable`, {
        messages: down.map((name) => `${name} is unreachable`),
      });
    }
    res.json({ status: 'ready', checks: Object.fromEntries(results.map((r) => [r.name, 'up'])) });
  }).all(methodNotAllowedHandler);
  return router;
}
