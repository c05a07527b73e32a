import express, { type RequestHandler, type Router } from 'express';
import { NotFoundError } from '@platform/errors';
import { idempotencyKeyOf } from '../idempotency/idempotency-key.ts';
import { type UpstreamRoute, routePatterns } from '../proxy/routes.ts';
import type { UpstreamProxy } from '../proxy/upstream-proxy.ts';
import { type ApiRequestDeps, apiRequest } from './api-request.ts';

export interface ApiRouterOptions extends ApiRequestDeps {
  routes: ReadonlyArray<{ route: UpstreamRoute; proxy: UpstreamProxy }>;
  bodyLimitBytes: number;
}

/**
 * `/v1/**` by path prefix to the upstreams, each request through: idempotency header present → body
 * read → the checks of `apiRequest` → proxy. Case-sensitive and strict, unlike Express's default, so
 * the path the gateway routes is exactly the path it checked. Paths of no upstream fall through to 404.
 */
export function apiRouter(options: ApiRouterOptions): Router {
  const router = express.Router({ caseSensitive: true, strict: true });
  // The proxy joins paths by collapsing `//`, so such a path would reach the upstream as another path
  // than the one signed and checked here. No operation has an empty segment: it is no route.
  router.use((req, _res, next) => {
    next(req.path.includes('//') ? new NotFoundError(`No route for ${req.method} ${req.path}`) : undefined);
  });
  const requireIdempotencyKey: RequestHandler = (req, _res, next) => {
    try {
      idempotencyKeyOf(req.headers['x-idempotency-key']);
    } catch (err) {
      options.metrics.rejected('idempotency-key-missing');
      throw err;
    }
    next();
  };
  // The digest must be checked against the bytes received, so the body is read whole (up to the
  // limit, else 413) and later forwarded from that buffer. `inflate: false`: a compressed body would
  // be verified and forwarded as something other than what was signed, so it is refused (415).
  const raw = express.raw({ type: () => true, limit: options.bodyLimitBytes, inflate: false });
  const readBody: RequestHandler = (req, res, next) => {
    raw(req, res, (err?: unknown) => {
      if ((err as { type?: unknown } | undefined)?.type === 'entity.too.large') options.metrics.rejected('body-too-large');
      next(err);
    });
  };
  for (const { route, proxy } of options.routes) {
    // One route per pattern, so the request metrics are labelled by it.
    for (const pattern of routePatterns(route)) router.all(pattern, requireIdempotencyKey, readBody, apiRequest(options, proxy));
  }
  return router;
}
