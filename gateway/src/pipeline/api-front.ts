import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler } from 'express';
import { type ErrorHandlerOptions, NotFoundError, writeError } from '@platform/errors';
import { nameServerSpan, setRouteLabel } from '@platform/service-kit';
import { corsHeaders } from '../cors/cors.ts';
import type { ApiRoutes } from './api.router.ts';

export interface ApiFrontOptions {
  routes: ApiRoutes;
  /** service-kit's request envelope (id, security headers, deadline, log line, metrics), as the app runs it first. */
  envelope: RequestHandler;
  /** CORS_ORIGINS. */
  corsOrigins: readonly string[];
  /** The app's error rendering (`finishApp`'s options). */
  errors: ErrorHandlerOptions;
}

/**
 * The documented operations dispatched from the operation table ahead of Express (issue 44): a request
 * whose method and path name an operation runs the very steps it runs under Express, in the same order
 * (the envelope, CORS, the route label and span name, the operation's chain), and its errors are written
 * by the same `writeError` as the app's error handler, without Express's per-request dispatch and the
 * prototype swap of its request and response. Returns false for every other request (docs, health, the
 * well-known documents, a 405, a 404, a fragment, a preflight), which the Express app answers.
 */
export function apiFront(options: ApiFrontOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { routes, envelope, errors } = options;
  const allowed = new Set(options.corsOrigins);
  return (req, res) => {
    const target = req.url ?? '';
    if (!target.startsWith('/v1/') || target.includes('#')) return false;
    const found = routes.chainOf(req.method ?? '', target);
    if (found === undefined) return false;
    // What Express would have set, and what every step reads the target from (at the top, it is the URL).
    const request = Object.assign(req, { originalUrl: target }) as Request;
    const fail = (err: unknown): void => {
      // As the app's error handler: nothing to say after a complete answer; mid-answer, the connection ends.
      if (res.writableEnded) return;
      if (res.headersSent) {
        (res as { err?: unknown }).err = err;
        req.socket.destroy();
        return;
      }
      writeError(request, res, err, errors);
    };
    try {
      envelope(request, res as Parameters<RequestHandler>[1], () => {
        try {
          if (corsHeaders(allowed, req, res)) {
            // A preflight of a method some operation has (none today): answered as the app answers it.
            res.statusCode = 204;
            res.end();
            return;
          }
          setRouteLabel(request, found.template);
          // Trace views tell operations apart by the documented route, as the services' spans are named.
          nameServerSpan(request.method, found.template);
          found.handle(request, res as Parameters<RequestHandler>[1], (err?: unknown) => fail(err ?? new NotFoundError()));
        } catch (err) {
          fail(err);
        }
      });
    } catch (err) {
      fail(err);
    }
    return true;
  };
}
