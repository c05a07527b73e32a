import { randomBytes } from 'node:crypto';
import { Piscina } from 'piscina';
import { ServiceUnavailableError } from '@platform/errors';
import { DEADLINE_MESSAGE, answerBudgetMs, assertRequestOpen } from '@platform/service-kit';
import { DEFAULT_HASHING_NICENESS } from '../config.ts';
import { CallerQueue, type Lane, SHARED_LANE } from './caller-queue.ts';
import type { PasswordTask, PasswordWorkerData } from './password-worker.ts';

/** Hashes and checks passwords off the event loop. */
export interface PasswordHasher {
  /** `lane`: whose work it is, for its turn among the callers' (`CallerQueue`); the shared lane when omitted. */
  hash(password: string, lane?: Lane): Promise<string>;
  /**
   * True when `password` matches `hash`. Without a hash (unknown user, user without a password) a
   * dummy hash of the same cost is compared, so the answer takes as long as a real miss. `beforeCompare`
   * runs when the check's turn comes, its thread held for it, right before the compare; a throw refuses the
   * check (the thread goes to the next in line): a login's attempt counted by its throttle before the compare.
   */
  verify(password: string, hash: string | null | undefined, lane?: Lane, beforeCompare?: () => Promise<void>): Promise<boolean>;
  /**
   * How many checks and hashes were refused without being made, since the start: `busy`, they would have
   * ended past their request's deadline (judged on arrival and again at their turn); `answered`, their
   * request was answered by its deadline while they waited (`identity_password_checks_refused_total`).
   */
  refusals(): Readonly<PasswordRefusals>;
  /**
   * Throws the busy 503 that a check in `lane` would meet now (counted as one), before the work that
   * precedes the check (a login's lookup of the user) is spent on it; the check itself judges again.
   */
  assertRoom(lane: Lane): void;
  close(): Promise<void>;
}

export interface PasswordRefusals {
  busy: number;
  answered: number;
}

export interface PasswordHasherOptions {
  /** bcrypt cost factor (BCRYPT_COST). */
  cost: number;
  /** Worker threads; each hashes one password at a time. */
  threads: number;
  /** The nice value of the worker threads (PASSWORD_HASH_NICENESS, password-worker.ts); 10 when not given. */
  niceness?: number;
}

// Sources run as .ts through type stripping and as .js once compiled; the worker file follows suit.
const WORKER = new URL(import.meta.url.endsWith('.ts') ? './password-worker.ts' : './password-worker.js', import.meta.url);

/** The 503 of a password check that would end past its request's deadline, given the checks ahead of it. */
export const HASHING_BUSY_MESSAGE = 'Too many password checks are waiting; try again later';

/**
 * Starts the worker pool and makes the dummy hash; `close()` stops the workers.
 *
 * The hashes wait for a thread in a queue of their own, the callers taking turns (`CallerQueue`: client keys,
 * then addresses; each address first come, first hashed), so that a flood of logins from one caller delays
 * its own checks and not everyone's:
 * - one whose request was answered by its deadline meanwhile (RequestDeadline: nothing of it may change any
 *   more) is dropped when its turn comes: under a burst of logins, the hashes of requests already answered
 *   503 would otherwise keep the threads busy after them, and make the next requests late too (80 logins of
 *   one user at once on two threads, a 4 s deadline: 48 answered 200; 160 right after them: 21);
 * - one that would end past its request's deadline, given the hashes to be served before it and how long
 *   the last ones took, is refused at once (503 with Retry-After, `HASHING_BUSY_MESSAGE`) instead of holding
 *   its connection until the deadline's 503. Known and unknown users queue alike: the refusal tells nothing;
 * - one whose turn comes with less of its request's time left than a hash takes is refused the same way then:
 *   hashes that slowed down while it waited (a flood that fills the machine) made it late, and its hash would
 *   keep the thread from the next check for an answer the deadline gives anyway.
 * Piscina's own queue is not used for this: its abort signal ends a running task by terminating its worker.
 */
export async function createPasswordHasher(options: PasswordHasherOptions): Promise<PasswordHasher> {
  const pool = new Piscina<PasswordTask, string | boolean>({
    filename: WORKER.href,
    minThreads: options.threads,
    maxThreads: options.threads,
    // Workers inherit --conditions=development only through execArgv; bcryptjs needs no condition.
    execArgv: [],
    workerData: { niceness: options.niceness ?? DEFAULT_HASHING_NICENESS } satisfies PasswordWorkerData,
  });
  /** Tasks waiting for a thread: each resolves when one is handed to it. */
  const waiting = new CallerQueue();
  let running = 0;
  /** How long one hash takes, smoothed over the last ones (a compare with the dummy hash's first). */
  let hashMs = 0;
  const refused: PasswordRefusals = { busy: 0, answered: 0 };
  /**
   * The 503 (counted busy) of a check that would end `expectedMs` from now, past its request's deadline: busy
   * when checks ahead of it make it late; the deadline's own message when its request has less time left than
   * one hash, with nothing ahead (a request that came late, or whose caller needs it answered soon).
   */
  const refuseIfLate = (expectedMs: number, queued: boolean): void => {
    if (expectedMs > answerBudgetMs()) {
      refused.busy += 1;
      throw new ServiceUnavailableError(queued ? HASHING_BUSY_MESSAGE : DEADLINE_MESSAGE);
    }
  };
  // Its turn comes once the hashes served before it are done, a thread's share each, then it takes one hash.
  const assertRoom = (lane: Lane): void => {
    const turns = Math.floor((running + waiting.ahead(lane)) / options.threads);
    refuseIfLate((turns + 1) * hashMs, turns > 0);
  };
  const inTurn = async <T>(task: PasswordTask, lane: Lane, beforeRun?: () => Promise<void>): Promise<T> => {
    assertRoom(lane);
    if (running < options.threads) running += 1;
    else await new Promise<void>((resolve) => waiting.push(lane, resolve));
    try {
      try {
        // The request's 503 was sent while this waited: the hash would serve nobody.
        assertRequestOpen();
      } catch (err) {
        refused.answered += 1;
        throw err;
      }
      // Its turn: nothing ahead any more, its own hash to take; those it waited behind made it late, if it is.
      refuseIfLate(hashMs, true);
      if (beforeRun !== undefined) await beforeRun();
      const started = performance.now();
      const result = (await pool.run(task)) as T;
      const tookMs = performance.now() - started;
      hashMs = hashMs === 0 ? tookMs : 0.8 * hashMs + 0.2 * tookMs;
      return result;
    } finally {
      // The thread goes to the next in line, else back to the free ones.
      const next = waiting.shift();
      if (next !== undefined) next();
      else running -= 1;
    }
  };
  const hash = (password: string, lane: Lane = SHARED_LANE) => inTurn<string>({ op: 'hash', password, cost: options.cost }, lane);
  const dummyHash = await hash(randomBytes(16).toString('base64url'));
  // The first hash's time holds the thread's start (its module loaded and compiled); a compare with the dummy
  // hash, on a thread started by then, is what the estimate starts from.
  hashMs = 0;
  await inTurn<boolean>({ op: 'compare', password: randomBytes(16).toString('base64url'), hash: dummyHash }, SHARED_LANE);
  return {
    hash,
    async verify(password, storedHash, lane = SHARED_LANE, beforeCompare) {
      const matches = await inTurn<boolean>({ op: 'compare', password, hash: storedHash ?? dummyHash }, lane, beforeCompare);
      return matches && storedHash !== null && storedHash !== undefined;
    },
    refusals: () => refused,
    assertRoom,
    close: () => pool.destroy(),
  };
}
