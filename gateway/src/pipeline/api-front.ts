import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler, Response } from 'express';
import { type ErrorHandlerOptions, NotFoundError, errorHandler } from '@platform/errors';
import { nameServerSpan, setRouteLabel } from '@platform/service-kit';
import { corsHeaders, isPreflight } from '../cors/cors.ts';
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
 * by the app's own error handler, without Express's per-request dispatch and the
 * prototype swap of its request and response. Returns false for every other request (docs, health, the
 * well-known documents, a 405, a 404, a fragment, a preflight), which the Express app answers.
 */
export function apiFront(options: ApiFrontOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { routes, envelope } = options;
  const allowed = new Set(options.corsOrigins);
  const handleError = errorHandler(options.errors);
  return (req, res) => {
    const target = req.url ?? '';
    // A preflight is the app's to answer (`cors`), whatever path it names.
    if (!target.startsWith('/v1/') || target.includes('#') || isPreflight(req)) return false;
    const found = routes.chainOf(req.method ?? '', target);
    if (found === undefined) return false;
    // What Express would have set, and what every step reads the target from (at the top, it is the URL).
    const request = Object.assign(req, { originalUrl: target }) as Request;
    const response = res as Response;
    // As under Express: an error after the answer started ends the connection (Express's final handler does).
    const fail = (err: unknown): void => {
      void handleError(err, request, response, () => req.socket.destroy());
    };
    try {
      envelope(request, response, () => {
        try {
          corsHeaders(allowed, req, res);
          setRouteLabel(request, found.template);
          // Trace views tell operations apart by the documented route, as the services' spans are named.
          nameServerSpan(request.method, found.template);
          found.handle(request, response, (err?: unknown) => fail(err ?? new NotFoundError()));
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
