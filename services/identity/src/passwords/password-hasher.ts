import { randomBytes } from 'node:crypto';
import { Piscina } from 'piscina';
import { assertRequestOpen } from '@platform/service-kit';
import type { PasswordTask } from './password-worker.ts';

/** Hashes and checks passwords off the event loop. */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /**
   * True when `password` matches `hash`. Without a hash (unknown user, user without a password) a
   * dummy hash of the same cost is compared, so the answer takes as long as a real miss.
   */
  verify(password: string, hash: string | null | undefined): Promise<boolean>;
  close(): Promise<void>;
}

export interface PasswordHasherOptions {
  /** bcrypt cost factor (BCRYPT_COST). */
  cost: number;
  /** Worker threads; each hashes one password at a time. */
  threads: number;
}

// Sources run as .ts through type stripping and as .js once compiled; the worker file follows suit.
const WORKER = new URL(import.meta.url.endsWith('.ts') ? './password-worker.ts' : './password-worker.js', import.meta.url);

/**
 * Starts the worker pool and makes the dummy hash; `close()` stops the workers.
 *
 * The hashes wait for a thread in a queue of their own, first come, first hashed, and one whose request was
 * answered by its deadline meanwhile (RequestDeadline: nothing of it may change any more) is dropped when
 * its turn comes: under a burst of logins, the hashes of requests already answered 503 would otherwise keep
 * the threads busy after them, and make the next requests late too (80 logins of one user at once on two
 * threads, a 4 s deadline: 48 answered 200; 160 right after them: 21). Piscina's own queue is not used for
 * this: its abort signal ends a running task by terminating its worker.
 */
export async function createPasswordHasher(options: PasswordHasherOptions): Promise<PasswordHasher> {
  const pool = new Piscina<PasswordTask, string | boolean>({
    filename: WORKER.href,
    minThreads: options.threads,
    maxThreads: options.threads,
    // Workers inherit --conditions=development only through execArgv; bcryptjs needs no condition.
    execArgv: [],
  });
  /** Tasks waiting for a thread: each resolves when one is handed to it. */
  const waiting: Array<() => void> = [];
  let running = 0;
  const inTurn = async <T>(task: PasswordTask): Promise<T> => {
    if (running < options.threads) running += 1;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      // The request's 503 was sent while this waited: the hash would serve nobody.
      assertRequestOpen();
      return (await pool.run(task)) as T;
    } finally {
      // The thread goes to the next in line, else back to the free ones.
      const next = waiting.shift();
      if (next !== undefined) next();
      else running -= 1;
    }
  };
  const hash = (password: string) => inTurn<string>({ op: 'hash', password, cost: options.cost });
  const dummyHash = await hash(randomBytes(16).toString('base64url'));
  return {
    hash,
    async verify(password, storedHash) {
      const matches = await inTurn<boolean>({ op: 'compare', password, hash: storedHash ?? dummyHash });
      return matches && storedHash !== null && storedHash !== undefined;
    },
    close: () => pool.destroy(),
  };
}
