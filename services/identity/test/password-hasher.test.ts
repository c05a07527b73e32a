import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createPasswordHasher } from '../src/passwords/password-hasher.ts';

/** The nice value of every thread of this process (Linux: field 19 of /proc/self/task/<tid>/stat). */
function threadNice(tid: string | number): number {
  const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

function threadNiceValues(): number[] {
  return readdirSync('/proc/self/task').map(threadNice);
}

describe('password hasher', () => {
  it('hashes and verifies off the event loop', async () => {
    const hasher = await createPasswordHasher({ cost: 4, threads: 1 });
    try {
      const hash = await hasher.hash('correct horse');
      assert.equal(await hasher.verify('correct horse', hash), true);
      assert.equal(await hasher.verify('wrong horse', hash), false);
      assert.equal(await hasher.verify('anything', undefined), false);
    } finally {
      await hasher.close();
    }
  });

  it('when logins keep coming, serves them in arrival order, so none waits behind later ones', async () => {
    const hasher = await createPasswordHasher({ cost: 4, threads: 1 });
    try {
      const hash = await hasher.hash('password');
      const started = Date.now();
      let slowest = 0;
      // Ten clients, each sending its next login as soon as the last one is answered.
      await Promise.all(
        Array.from({ length: 10 }, async () => {
          while (Date.now() - started < 1500) {
            const at = Date.now();
            await hasher.verify('password', hash);
            slowest = Math.max(slowest, Date.now() - at);
          }
        }),
      );
      // Ten compares at cost 4 take a few ms; a task sent to the back of the queue waited the whole run.
      assert.ok(slowest < 750, `a verification waited ${slowest} ms`);
    } finally {
      await hasher.close();
    }
  });

  it('on Linux, runs its threads at a lower priority than the event loop, so logins never crowd out other requests', async function () {
    if (!existsSync('/proc/thread-self')) this.skip();
    const before = threadNiceValues().filter((n) => n === 10).length;
    const hasher = await createPasswordHasher({ cost: 4, threads: 2 });
    try {
      await Promise.all([hasher.hash('a'), hasher.hash('b')]);
      assert.equal(threadNiceValues().filter((n) => n === 10).length - before, 2);
      // The main thread's id is the process id; it need not be the first entry (thread ids wrap around).
      assert.equal(threadNice(process.pid), 0, 'the main thread keeps its priority');
    } finally {
      await hasher.close();
    }
  });
});
