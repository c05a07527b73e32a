import express, { type RequestHandler } from 'express';
import { MethodNotAllowedError } from '@platform/errors';
import { inSequence, nameServerSpan, setRouteLabel } from '@platform/service-kit';
import { idempotencyKeyOf } from '../idempotency/idempotency-key.ts';
import type { OperationTable } from '../proxy/operation-table.ts';
import type { UpstreamName } from '../proxy/routes.ts';
import type { UpstreamProxy } from '../proxy/upstream-proxy.ts';
import { type ApiRequestDeps, apiRequest } from './api-request.ts';

export interface ApiRouterOptions extends ApiRequestDeps {
  /** The allow-list: the operations of the merged API document. */
  operations: OperationTable;
  /** One proxy per upstream. */
  proxies: Readonly<Record<UpstreamName, UpstreamProxy>>;
  bodyLimitBytes: number;
}

function pathOf(url: string): string {
  const at = url.indexOf('?');
  return at === -1 ? url : url.slice(0, at);
}

/**
 * The documented operations (CONTRACT.md part 8), each through: idempotency header present → body read →
 * the checks of `apiRequest` → proxy to its upstream. A documented path with another method answers 405
 * with `Allow`; any other path is left to the 404 handler. Neither is ever proxied, and whether a bearer
 * token is needed is the operation's own setting, not its path's.
 */
export function apiRouter(options: ApiRouterOptions): RequestHandler {
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
  const pipelines = new Map(
    options.operations.operations.map((operation) => [
      operation,
      inSequence([requireIdempotencyKey, readBody, apiRequest(options, options.proxies[operation.upstream], operation)]),
    ]),
  );
  return (req, res, next) => {
    const match = options.operations.match(req.method, pathOf(req.originalUrl));
    if (match === undefined) {
      if (req.originalUrl.startsWith('/v1/')) options.metrics.rejected('unknown-operation');
      next();
      return;
    }
    setRouteLabel(req, match.template);
    // Trace views tell operations apart by the documented route, as the services' spans are named.
    nameServerSpan(req.method, match.template);
    if (match.operation === undefined) {
      options.metrics.rejected('method-not-allowed');
      next(new MethodNotAllowedError(req.method, match.allow));
      return;
    }
    const pipeline = pipelines.get(match.operation);
    if (pipeline === undefined) throw new Error(`no pipeline for ${match.operation.method} ${match.operation.template}`);
    pipeline(req, res, next);
  };
}
