import { AsyncResource } from 'node:async_hooks';
import { randomInt } from 'node:crypto';
import { type Logger, currentRequestLog } from '@platform/service-kit';

/** The longest an anonymous reset request waits before its user-dependent work runs. */
export const RESET_WORK_MAX_DELAY_MS = 500;
/** Requests kept waiting at most; past that new ones are dropped, whoever they name (a flood must not grow memory). */
const MAX_WAITING = 10_000;

/** The user-dependent part of anonymous reset requests, carried out away from their answers. */
export interface ResetWorkQueue {
  /** Queues the work and returns at once. */
  add(work: () => Promise<void>): void;
}

/**
 * A queue drained at a random moment, up to RESET_WORK_MAX_DELAY_MS after the first request that found
 * it empty, one piece of work after the other in the order they came.
 *
 * Why: the work of a known user (a locked read, the token's transaction, the mail) costs the process
 * several milliseconds more than an unknown user's lookup. Run at once after the answer, it landed on the
 * caller's next request, whose time then told whether the user exists (issue 17's audit: 25 ms after a
 * known user, 13 ms after an unknown one). Drained at a moment drawn from the CSPRNG, it lands on requests
 * that follow a known user no more often than an unknown one, whoever sent them. What is left is the
 * process's total work over the next half second: a few milliseconds among everything else it serves,
 * which a caller could only tell apart by averaging many requests, and the reset throttle
 * (PASSWORD_RESET_REQUESTS_PER_HOUR per client key and per address) does not grant many.
 */
export function createResetWorkQueue(logger: Logger): ResetWorkQueue {
  let waiting: Array<() => Promise<void>> = [];
  let timer: NodeJS.Timeout | undefined;
  // Drains run one after the other, so two requests for one user issue their tokens in the order asked.
  let draining: Promise<void> = Promise.resolve();

  const runOne = async (work: () => Promise<void>) => {
    try {
      await work();
    } catch (err) {
      try {
        // Without the username: the log must not become a list of who asked for what.
        currentRequestLog(logger).error({ err }, 'password reset request could not be completed');
      } catch {
        // Nothing left to tell: a logging fault must not stop the queue either.
      }
    }
  };
  const drain = () => {
    timer = undefined;
    const batch = waiting;
    waiting = [];
    draining = draining.then(async () => {
      for (const work of batch) await runOne(work);
    });
  };

  return {
    add(work) {
      if (waiting.length >= MAX_WAITING) {
        currentRequestLog(logger).warn({ waiting: waiting.length }, 'password reset request dropped: too many waiting');
        return;
      }
      // Bound to the asking request's async context, so its mail and error lines carry that request's ids,
      // not those of whichever request started the timer.
      waiting.push(AsyncResource.bind(work));
      // Unref'd: a process that is stopping does not wait for it (like a mail the provider refused, the
      // caller may ask again).
      timer ??= setTimeout(drain, randomInt(RESET_WORK_MAX_DELAY_MS + 1)).unref();
    },
  };
}
