import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { isErrorBody } from '@platform/errors';
import { type Knex, type Migration, deadlineTransaction, retryingTransaction } from '../src/database.ts';
import { DEADLINE_MESSAGE, type ServerHandle, createBaseApp, createMetrics, finishApp, listen } from '../src/index.ts';
import { captureLogger, createTestDatabase } from '../src/testing/index.ts';

/** A table of notes whose insert of 'slow commit' makes the commit itself take 250 ms (a deferred trigger). */
const migrations: Migration[] = [
  {
    name: '0001_notes_with_a_slow_commit',
    up: async (db) => {
      await db.schema.createTable('notes', (t) => {
        t.increments('id');
        t.text('body').notNullable();
      });
      await db.raw(`
        CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.body = 'slow commit' THEN PERFORM pg_sleep(0.25); END IF;
          RETURN NULL;
        END $$;
        CREATE CONSTRAINT TRIGGER notes_slow_commit AFTER INSERT ON notes DEFERRABLE INITIALLY DEFERRED
          FOR EACH ROW EXECUTE FUNCTION slow_commit();
      `);
    },
    down: async (db) => {
      await db.schema.dropTable('notes');
      await db.raw('DROP FUNCTION slow_commit()');
    },
  },
];

const DEADLINE_MS = 400;

/**
 * The request deadline (REQUEST_DEADLINE_MS) as a request's transactions keep it: its 503 means that nothing
 * was changed (the gateway frees the idempotency key of a 5xx, so a retry must not apply a change twice),
 * and a change that committed, or is committing, gets the request's own answer.
 */
describe('deadlineTransaction: the deadline\'s 503 means nothing was changed', () => {
  let test: Awaited<ReturnType<typeof createTestDatabase>>;
  let server: ServerHandle;
  /** What each route's transactions threw, by route: the tests read why a change was refused. */
  const thrown = new Map<string, unknown>();
  /** How many times the work of /late-start ran. */
  let lateWork = 0;
  /** The change /after-answer makes after its answer. */
  let afterAnswer: Promise<unknown> | undefined;

  const post = async (path: string, body: string): Promise<{ status: number; body: unknown; ms: number }> => {
    const started = performance.now();
    const res = await fetch(`${server.url}${path}?body=${encodeURIComponent(body)}`, { method: 'POST' });
    return { status: res.status, body: await res.json(), ms: performance.now() - started };
  };
  const notes = async (body: string): Promise<number> => (await test.db('notes').where({ body })).length;
  const insert = (trx: Knex.Transaction, body: string) => trx('notes').insert({ body });

  before(async () => {
    test = await createTestDatabase('deadline', migrations);
    await test.db('notes').insert({ body: 'locked' });
    const log = captureLogger('test');
    const app = createBaseApp({ logger: log.logger, metrics: createMetrics('test'), checks: [], lifecycle: { draining: false }, requestDeadlineMs: DEADLINE_MS });
    const route = (path: string, change: (body: string) => Promise<void>) =>
      app.post(path, async (req, res) => {
        const body = String(req.query.body);
        try {
          await change(body);
        } catch (err) {
          thrown.set(body, err);
          throw err;
        }
        res.status(201).json({ body });
      });
    // Work of the transaction outlives the deadline: the commit must not come.
    route('/slow-work', (body) =>
      deadlineTransaction(test.db, async (trx) => {
        await insert(trx, body);
        await sleep(DEADLINE_MS + 100);
      }),
    );
    // Starts after the deadline: must not start.
    route('/late-start', async (body) => {
      await sleep(DEADLINE_MS + 100);
      await deadlineTransaction(test.db, (trx) => {
        lateWork += 1;
        return insert(trx, body);
      });
    });
    // Waits for the row a test holds: the wait must end with the deadline, not the statement timeout's 5 s.
    route('/held', (body) =>
      deadlineTransaction(test.db, async (trx) => {
        await insert(trx, body);
        await trx('notes').where({ body: 'locked' }).update({ body: 'locked' });
      }),
    );
    // The commit starts halfway to the deadline and ends 50 ms after it.
    route('/slow-commit', (body) =>
      deadlineTransaction(test.db, async (trx) => {
        // Its 250 ms stay well within the statement timeout the transaction got (the time left when it began).
        await sleep(DEADLINE_MS / 2);
        await insert(trx, body);
      }),
    );
    // A change committed; a second part of it comes after the deadline.
    route('/two-parts', async (body) => {
      await deadlineTransaction(test.db, (trx) => insert(trx, `${body} 1`));
      await sleep(DEADLINE_MS + 100);
      await retryingTransaction(test.db, (trx) => insert(trx, `${body} 2`));
    });
    // Answers at once; its change is made after the deadline (as a reset token is stored after an anonymous answer).
    app.post('/after-answer', (req, res) => {
      const body = String(req.query.body);
      res.status(202).json({ body });
      afterAnswer = sleep(DEADLINE_MS + 100).then(() =>
        deadlineTransaction(test.db, async (trx) => {
          // A statement of some length: no timeout shortened to the deadline's (past) time left applies.
          await trx.raw('SELECT pg_sleep(0.05)');
          await insert(trx, body);
        }),
      );
    });
    finishApp(app);
    server = await listen(app, 0, '127.0.0.1');
  });
  after(async () => {
    await server?.close(100);
    await test?.drop();
  });

  it('when the transaction\'s work outlives the deadline, the answer is the deadline\'s 503 and the change is rolled back, never committed after it', async () => {
    const res = await post('/slow-work', 'slow work');
    assert.equal(res.status, 503);
    assert.ok(isErrorBody(res.body));
    assert.equal((res.body as { message: string }).message, DEADLINE_MESSAGE);
    await sleep(300);
    assert.equal(await notes('slow work'), 0, 'the change committed after its 503');
    assert.match(String((thrown.get('slow work') as Error | undefined)?.message), /too long/, 'the commit was refused by the deadline');
  });

  it('when a transaction would start after the deadline, it does not start', async () => {
    assert.equal((await post('/late-start', 'late start')).status, 503);
    await sleep(200);
    assert.equal(lateWork, 0, 'the transaction started');
    assert.equal(await notes('late start'), 0);
    assert.match(String((thrown.get('late start') as Error | undefined)?.message), /too long/);
  });

  it('when a statement waits for a lock, its wait ends at the deadline (the statement timeout shortened to the time left), and nothing commits once the lock is free', async () => {
    const holder = await test.db.transaction();
    try {
      await holder('notes').where({ body: 'locked' }).forUpdate();
      const res = await post('/held', 'held');
      assert.equal(res.status, 503);
      // The 503 came from the deadline; the statement was cancelled with it, not 5 s later.
      await sleep(150);
      assert.equal(String((thrown.get('held') as { code?: string } | undefined)?.code), '57014', 'the statement was cancelled by its shortened timeout');
      const waiting = await test.db.raw("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
      assert.equal(waiting.rows[0].n, 0, 'the request still waits for the lock');
    } finally {
      await holder.rollback();
    }
    await sleep(100);
    assert.equal(await notes('held'), 0);
  });

  it('when the deadline passes while the change commits, the answer waits for the commit and tells what was done (201), not 503', async () => {
    const res = await post('/slow-commit', 'slow commit');
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.ok(res.ms > DEADLINE_MS, `answered after ${res.ms} ms: the commit did not outlive the deadline`);
    assert.equal(await notes('slow commit'), 1);
  });

  it('when a change committed before the deadline, its further transactions go on after it and the answer is the request\'s own', async () => {
    const res = await post('/two-parts', 'two parts');
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual([await notes('two parts 1'), await notes('two parts 2')], [1, 1]);
  });

  it('when the request\'s own answer was sent, work that goes on after it is not held to the deadline', async () => {
    assert.equal((await post('/after-answer', 'after answer')).status, 202);
    await afterAnswer;
    assert.equal(await notes('after answer'), 1);
  });

  it('outside a request (start-up, jobs), a transaction has no deadline', async () => {
    await deadlineTransaction(test.db, async (trx) => {
      await sleep(DEADLINE_MS + 50);
      await insert(trx, 'no request');
    });
    assert.equal(await notes('no request'), 1);
  });
});
