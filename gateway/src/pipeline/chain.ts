import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import { toHttpError } from '@platform/errors';
import type { GatewayOperation } from '../proxy/operation-table.ts';
import { GatewayRequest } from './gateway-request.ts';

/** One named step of an API request: reads what the steps before it found, throws the request's answer when it refuses. */
export type Step = (request: GatewayRequest) => void | Promise<void>;

/**
 * The last step: hands the request on, with the status that decides its idempotency key (as soon as it is
 * known, before its body is relayed): the client's, but an upstream's success that came after the deadline's
 * 503 (the change was made: a retry must not make it twice); undefined when no answer came; a promise of it
 * when it is not known at once (a cached hit is).
 */
export type Forward = (request: GatewayRequest) => number | undefined | Promise<number | undefined>;

/**
 * CONTRACT.md part 3, the one rule of the idempotency key: a request that held it gives it back when its
 * answer is a 5xx or never came (upstream down or silent, Redis unreachable, a fault of the gateway, the
 * deadline); every other answer keeps it. A deadline's 503 followed by the upstream's success keeps it too,
 * since the change was made and a retry must not make it twice (the forward step reports that success).
 */
export function keepsIdempotencyKey(answer: number | undefined): boolean {
  return answer !== undefined && answer < 500;
}

/**
 * Runs `steps` in order, then `forward`. The first step that throws decides the answer (the error goes to
 * Express's error handler, which renders it), and the rest do not run; nor does anything after someone
 * else answered (the request deadline's 503). Then, in one place, the idempotency key is released or kept
 * (`keepsIdempotencyKey`).
 */
export function chain(operation: GatewayOperation, steps: readonly Step[], forward: Forward, release: (request: GatewayRequest) => void): RequestHandler {
  return (req, res, next) => {
    const request = new GatewayRequest(req, res, operation, randomUUID());
    const run = async (): Promise<number | undefined> => {
      for (const step of steps) {
        // A step that decides at once returns nothing: no promise, no microtask to wait for.
        const pending = step(request);
        if (pending !== undefined) await pending;
        if (res.headersSent) return res.statusCode;
      }
      const answer = forward(request);
      return answer instanceof Promise ? await answer : answer;
    };
    void (async () => {
      let answer: number | undefined;
      let failure: { err: unknown } | undefined;
      try {
        answer = await run();
      } catch (err) {
        failure = { err };
        answer = res.headersSent ? res.statusCode : toHttpError(err).status;
      } finally {
        if (request.mayHoldKey && !keepsIdempotencyKey(answer)) release(request);
      }
      // Rendered by Express's error handler, unless an answer (the deadline's) went out already.
      if (failure !== undefined && !res.headersSent) next(failure.err);
    })();
  };
}
