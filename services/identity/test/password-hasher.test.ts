import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { DEADLINE_MESSAGE, RequestDeadline, createLogger, enterRequest } from '@platform/service-kit';
import { HASHING_BUSY_MESSAGE, createPasswordHasher } from '../src/passwords/password-hasher.ts';

/** The nice value of every thread of this process (Linux: field 19 of /proc/self/task/<tid>/stat). */
function threadNice(tid: string | number): number {
  const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

function threadNiceValues(): number[] {
  return readdirSync('/proc/self/task').map(threadNice);
}

/** Runs `run` as a login request under `deadline` would, as the request envelope enters one. */
function inRequest(deadline: RequestDeadline, run: () => void): void {
  const fields = { id: 'r1', clientRequestId: undefined, method: 'POST', url: '/v1/auth/login', remoteAddress: '127.0.0.1' };
  enterRequest({ headers: {} } as IncomingMessage, createLogger({ service: 'test', level: 'silent' }), fields, deadline, run);
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

  it('when a check\'s turn comes with less of its request\'s time left than a hash takes, refuses it busy then and gives the thread to the next', async () => {
    const hasher = await createPasswordHasher({ cost: 10, threads: 1 });
    try {
      const hash = await hasher.hash('password');
      // The thread is busy with another check, of no request.
      const first = hasher.verify('password', hash);
      // A check of a request with time enough on arrival: let in, it waits. While it waits, the hashes ahead
      // slow down, and when its turn comes a millisecond is left.
      const deadline = new RequestDeadline(performance.now() + 600_000, { headersSent: false });
      let leftMs = 600_000;
      deadline.answerBudgetMs = () => leftMs;
      let late: Promise<boolean> | undefined;
      let ranBeforeCompare = false;
      inRequest(deadline, () => {
        late = hasher.verify('password', hash, undefined, async () => {
          ranBeforeCompare = true;
        });
      });
      // Queued behind it, of no request.
      const next = hasher.verify('password', hash);
      leftMs = 1;
      assert.equal(await first, true);
      await assert.rejects(late!, (err: Error & { status?: number }) => err.message === HASHING_BUSY_MESSAGE && err.status === 503);
      assert.equal(ranBeforeCompare, false, 'the refused check went on to its compare');
      assert.equal(await next, true);
      assert.deepEqual(hasher.refusals(), { busy: 1, answered: 0 });
    } finally {
      await hasher.close();
    }
  });

  it('when a check\'s request has less time left than a hash takes and nothing is ahead of it, refuses it with the deadline\'s message, not a busy one', async () => {
    const hasher = await createPasswordHasher({ cost: 10, threads: 1 });
    try {
      const hash = await hasher.hash('password');
      // A request with 1 ms left (its body came late, or the gateway needs it answered soon); the thread is free.
      const deadline = new RequestDeadline(performance.now() + 1, { headersSent: false });
      let check: Promise<boolean> | undefined;
      inRequest(deadline, () => {
        check = hasher.verify('password', hash);
      });
      await assert.rejects(check!, (err: Error & { status?: number }) => err.message === DEADLINE_MESSAGE && err.status === 503);
      assert.deepEqual(hasher.refusals(), { busy: 1, answered: 0 });
    } finally {
      await hasher.close();
    }
  });

  it('when a check\'s request is answered by its deadline while the check waits, the check is not made when its turn comes', async () => {
    const hasher = await createPasswordHasher({ cost: 12, threads: 1 });
    try {
      const hash = await hasher.hash('password');
      // The thread is busy with another check, of no request.
      const busy = hasher.verify('password', hash);
      // A check of a request whose deadline is far: let in, it waits.
      const deadline = new RequestDeadline(performance.now() + 600_000, { headersSent: false });
      let waiting: Promise<boolean> | undefined;
      inRequest(deadline, () => {
        waiting = hasher.verify('password', hash);
      });
      // The envelope answers the deadline's 503 meanwhile.
      assert.equal(deadline.expire(), true);
      assert.equal(await busy, true);
      await assert.rejects(waiting!, (err: Error) => err.message === DEADLINE_MESSAGE);
      assert.deepEqual(hasher.refusals(), { busy: 0, answered: 1 });
    } finally {
      await hasher.close();
    }
  });

  it('runs a check\'s beforeCompare when its turn comes; a throw refuses that check and the thread serves the next', async () => {
    const hasher = await createPasswordHasher({ cost: 10, threads: 1 });
    try {
      const hash = await hasher.hash('password');
      const order: string[] = [];
      const first = hasher.verify('password', hash, undefined, async () => {
        order.push('first turn');
      });
      // Queued behind the first: its turn comes once the first compare ended.
      const refused = hasher.verify('password', hash, undefined, async () => {
        order.push('second turn');
        throw new Error('refused at its turn');
      });
      const third = hasher.verify('wrong', hash, undefined, async () => {
        order.push('third turn');
      });
      order.push('queued');
      assert.equal(await first, true);
      await assert.rejects(refused, /refused at its turn/);
      assert.equal(await third, false);
      assert.deepEqual(order, ['first turn', 'queued', 'second turn', 'third turn']);
      // The refused check gave its thread back: another check runs.
      assert.equal(await hasher.verify('password', hash), true);
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

  it('on Linux, runs its threads at the niceness it is given (PASSWORD_HASH_NICENESS), 0 leaving them at the event loop\'s priority', async function () {
    if (!existsSync('/proc/thread-self')) this.skip();
    for (const niceness of [15, 0]) {
      const counted = (values: number[]) => values.filter((n) => n === niceness).length;
      const before = counted(threadNiceValues());
      const hasher = await createPasswordHasher({ cost: 4, threads: 2, niceness });
      try {
        await Promise.all([hasher.hash('a'), hasher.hash('b')]);
        const after = threadNiceValues();
        assert.equal(counted(after) - before, 2, `niceness ${niceness}: ${after.join(' ')}`);
        assert.equal(threadNice(process.pid), 0, 'the main thread keeps its priority');
      } finally {
        await hasher.close();
      }
    }
  });
});
