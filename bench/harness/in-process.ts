// What the `hardening` group (bench/groups/hardening.ts) needs to time request handling in the harness itself,
// without sockets: an Express app driven by in-memory requests.
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';

/**
 * One request through an app: the status it ended with. 200 means it passed every middleware and reached
 * the end (where a route handler would answer); otherwise the status of the error it was refused with.
 * A number when the app finished synchronously (every check here does, once warm), else a promise.
 */
export type Serve = (method: string, target: string) => number | Promise<number>;

const statusOf = (err: unknown): number => {
  const status = (err as { status?: unknown } | null)?.status;
  return typeof status === 'number' ? status : 500;
};

/**
 * An Express app with what `mount` adds, driven without a socket: each request is a fresh object on the
 * app's request prototype (Express sets that prototype itself; starting from it keeps the objects of one
 * shape), the response a bare one that nothing here writes to. The end of the chain and the error
 * handler record the outcome, so nothing the checks compute can be optimised away unobserved.
 */
export function inProcessApp(mount: (app: Express) => void): Serve {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  mount(app);
  let outcome = -1;
  let waiting: ((status: number) => void) | undefined;
  const finish = (status: number) => {
    outcome = status;
    waiting?.(status);
  };
  const reached: RequestHandler = () => finish(200);
  const refused: ErrorRequestHandler = (err, _req, _res, _next) => finish(statusOf(err));
  app.use(reached);
  app.use(refused);
  return (method, target) => {
    outcome = -1;
    waiting = undefined;
    const req = Object.assign(Object.create(app.request) as object, { method, url: target, headers: { host: 'bench' } });
    const res = Object.create(app.response) as object;
    app(req as never, res as never);
    if (outcome !== -1) return outcome;
    return new Promise<number>((resolve) => {
      waiting = resolve;
    });
  };
}
