// What the `hardening` group (bench/hardening.ts) needs to time request handling in the harness itself,
// without sockets: an Express app driven by in-memory requests, and the code as it was before issue 16's
// fixes, to compare with (the pre-fix inSequence, the validator patch without runNow, the prefix routes).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import { ROOT } from './config.ts';

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

/**
 * `inSequence` as it was before issue 16 (commit a512dad): the same loop without the try/catch around
 * each step, so a middleware that throws after an asynchronous step stops the process. For comparison only.
 */
export function inSequenceBeforeIssue16(handlers: readonly RequestHandler[]): RequestHandler {
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
      const result: unknown = handler(req, res, step);
      if (result instanceof Promise) result.catch((error: unknown) => step(error ?? new Error('Rejected promise')));
    };
    step();
  };
}

/** The gateway's routes before issue 16 (commit 79bf092): Express patterns by path prefix, any method. */
export function prefixRoutesBeforeIssue16(prefixes: readonly string[], routed: RequestHandler): RequestHandler {
  const router = express.Router({ caseSensitive: true, strict: true });
  router.use((req, _res, next) => {
    next(req.path.includes('//') ? Object.assign(new Error('no route'), { status: 404 }) : undefined);
  });
  for (const prefix of prefixes) router.all(`${prefix}{/*rest}`, routed);
  return router;
}

/** The options `packages/service-kit/src/openapi.ts` gives the validator in production (no response validation). */
function validatorOptions(apiSpec: string): Record<string, unknown> {
  return {
    apiSpec,
    validateRequests: { allowUnknownQueryParameters: false, allErrors: true },
    validateResponses: false,
    validateSecurity: false,
    ignorePaths: /^\/(health\/(live|ready)|metrics)$/,
  };
}

/**
 * The installed (patched) express-openapi-validator with each `runNow(mw, req, res, next)` of issue 16 put
 * back to the direct call `mw(req, res, next)` it replaced: the patch as it was before (commit a512dad).
 * Its main file is compiled from a copy whose requires point at the installed package, so everything else
 * is the very same code. Throws when the patch no longer has the five calls, so the comparison cannot
 * silently measure something else.
 */
export async function validatorWithoutRunNow(apiSpec: string): Promise<RequestHandler[]> {
  const fromKit = createRequire(join(ROOT, 'packages/service-kit/package.json'));
  const main = fromKit.resolve('express-openapi-validator');
  const file = join(dirname(main), 'openapi.validator.js');
  const fromPackage = createRequire(file);
  let calls = 0;
  const source = (await readFile(file, 'utf8'))
    .replace(/runNow\((\w+), req, res, next\)/g, (_m, middleware: string) => {
      calls += 1;
      return `${middleware}(req, res, next)`;
    })
    .replace(/require\("([^"]+)"\)/g, (_m, spec: string) => `require(${JSON.stringify(fromPackage.resolve(spec))})`);
  if (calls !== 5) throw new Error(`expected 5 runNow calls in ${file}, found ${calls}: the patch changed, update bench/in-process.ts`);
  const dir = await mkdtemp(join(tmpdir(), 'bench-validator-'));
  try {
    const copy = join(dir, 'openapi.validator.cjs');
    await writeFile(copy, source);
    const { OpenApiValidator } = createRequire(copy)(copy) as { OpenApiValidator: new (options: unknown) => { installMiddleware(spec: unknown): RequestHandler[] } };
    const { OpenApiSpecLoader } = fromPackage('./framework/openapi.spec.loader') as { OpenApiSpecLoader: new (options: unknown) => { load(): unknown } };
    // What the package's own `middleware(options)` does (dist/index.js), with this copy's class.
    const options = validatorOptions(apiSpec);
    return new OpenApiValidator(options).installMiddleware(new OpenApiSpecLoader({ apiDoc: apiSpec }).load());
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
