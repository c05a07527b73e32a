import { randomBytes } from 'node:crypto';
import { Piscina } from 'piscina';
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

/** Starts the worker pool and makes the dummy hash; `close()` stops the workers. */
export async function createPasswordHasher(options: PasswordHasherOptions): Promise<PasswordHasher> {
  const pool = new Piscina<PasswordTask, string | boolean>({
    filename: WORKER.href,
    minThreads: options.threads,
    maxThreads: options.threads,
    // Workers inherit --conditions=development only through execArgv; bcryptjs needs no condition.
    execArgv: [],
    // First come, first hashed. By default a task that finds every thread busy goes back to the end of
    // the queue, so under a steady stream of logins some wait until the request deadline (8 s) and fail.
    stricterFIFO: true,
  });
  const hash = async (password: string) => (await pool.run({ op: 'hash', password, cost: options.cost })) as string;
  const dummyHash = await hash(randomBytes(16).toString('base64url'));
  return {
    hash,
    async verify(password, storedHash) {
      const matches = (await pool.run({ op: 'compare', password, hash: storedHash ?? dummyHash })) as boolean;
      return matches && storedHash !== null && storedHash !== undefined;
    },
    close: () => pool.destroy(),
  };
}
