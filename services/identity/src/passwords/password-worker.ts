import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { workerData } from 'node:worker_threads';
import bcrypt from 'bcryptjs';

/** One job for the password worker: make a hash, or compare a password with one. */
export type PasswordTask =
  | { op: 'hash'; password: string; cost: number }
  | { op: 'compare'; password: string; hash: string };

/** What a worker is started with (piscina's workerData). */
export interface PasswordWorkerData {
  /** How much nicer than the event loop a hashing thread is (PASSWORD_HASH_NICENESS: 0 = same priority, 19 = lowest). */
  niceness: number;
}

/**
 * A hashing thread yields the CPU to every other thread of the machine that wants it, so that ten
 * logins at once delay the event loop, and with it every other request, as little as possible (two
 * cores, one hashing thread: an account read's p99 during ten logins halved, the bench diary, `git show f0a4e11:bench/README.md`).
 * Linux keeps a nice value per thread and names the calling thread in /proc/thread-self; elsewhere
 * (or when refused, or with a niceness of 0) the thread keeps the normal priority.
 */
function yieldToOtherWork(): void {
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
    const { niceness } = (workerData ?? {}) as Partial<PasswordWorkerData>;
    if (Number.isInteger(threadId) && threadId > 0 && niceness !== undefined && niceness > 0) setPriority(threadId, niceness);
  } catch {
    // Not Linux: nothing to do.
  }
}
yieldToOtherWork();

/**
 * Runs in a worker thread (piscina): bcrypt is pure CPU, and on the main thread ten concurrent logins
 * stall every other request of the process. Inside a worker the synchronous variants are the fastest.
 */
export default function run(task: PasswordTask): string | boolean {
  return task.op === 'hash' ? bcrypt.hashSync(task.password, task.cost) : bcrypt.compareSync(task.password, task.hash);
}
