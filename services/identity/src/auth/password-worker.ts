import bcrypt from 'bcryptjs';

/** One job for the password worker: make a hash, or compare a password with one. */
export type PasswordTask =
  | { op: 'hash'; password: string; cost: number }
  | { op: 'compare'; password: string; hash: string };

/**
 * Runs in a worker thread (piscina): bcrypt is pure CPU, and on the main thread ten concurrent logins
 * stall every other request of the process. Inside a worker the synchronous variants are the fastest.
 */
export default function run(task: PasswordTask): string | boolean {
  return task.op === 'hash' ? bcrypt.hashSync(task.password, task.cost) : bcrypt.compareSync(task.password, task.hash);
}
