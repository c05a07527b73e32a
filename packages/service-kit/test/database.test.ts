import assert from 'node:assert/strict';
import { type Knex, type Migration, ensureDatabaseExists, isTransactionConflict, retryingTransaction } from '../src/database.ts';
import { TEST_POSTGRES_URL, createTestDatabase, uniqueName } from '../src/testing/index.ts';
import { createDatabase, dropDatabase } from '../src/database.ts';

const migrations: Migration[] = [
  {
    name: '0001_notes',
    up: async (db) => {
      await db.schema.createTable('notes', (t) => {
        t.increments('id');
        t.text('body').notNullable();
      });
    },
    down: async (db) => {
      await db.schema.dropTable('notes');
    },
  },
];

async function databaseExists(name: string): Promise<boolean> {
  const admin = createDatabase({ url: TEST_POSTGRES_URL, applicationName: 'test-admin' });
  try {
    const rows = await admin('pg_database').where({ datname: name }).select('datname');
    return rows.length === 1;
  } finally {
    await admin.destroy();
  }
}

describe('createTestDatabase', () => {
  it('creates a fresh database with the migrations applied, and drop() removes it', async () => {
    const test = await createTestDatabase('kit', migrations);
    const name = new URL(test.url).pathname.slice(1);
    await test.db('notes').insert({ body: 'hello' });
    assert.deepEqual(await test.db('notes').select('body'), [{ body: 'hello' }]);
    const recorded = await test.db('knex_migrations').select('name');
    assert.deepEqual(recorded, [{ name: '0001_notes' }]);
    assert.equal(await databaseExists(name), true);
    await test.drop();
    assert.equal(await databaseExists(name), false);
  });
});

describe('ensureDatabaseExists', () => {
  it('when several processes race to create the same database, all succeed and exactly one creates it', async () => {
    const url = new URL(TEST_POSTGRES_URL);
    url.pathname = `/${uniqueName('race')}`;
    try {
      const results = await Promise.all([1, 2, 3, 4].map(() => ensureDatabaseExists(url.toString())));
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal(await databaseExists(url.pathname.slice(1)), true);
    } finally {
      await dropDatabase(url.toString());
    }
  });
});

describe('retryingTransaction', () => {
  let test: Awaited<ReturnType<typeof createTestDatabase>>;
  before(async () => {
    test = await createTestDatabase('retry', migrations);
    await test.db('notes').insert([{ body: 'a' }, { body: 'b' }]);
  });
  after(async () => {
    await test?.drop();
  });

  /** Locks note `first`, waits until the other transaction holds its first lock too, then takes note `second`. */
  const crosswise = (first: number, second: number, held: { count: number }, runs: { count: number }) => async (trx: Knex.Transaction) => {
    runs.count += 1;
    await trx('notes').where({ id: first }).update({ body: trx.raw("body || '+'") });
    held.count += 1;
    while (held.count < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    await trx('notes').where({ id: second }).update({ body: trx.raw("body || '+'") });
    return first;
  };

  it('when two transactions deadlock, the one Postgres rolls back runs again and both commit', async () => {
    const held = { count: 0 };
    const runs = { count: 0 };
    const results = await Promise.all([
      retryingTransaction(test.db, crosswise(1, 2, held, runs)),
      retryingTransaction(test.db, crosswise(2, 1, held, runs)),
    ]);
    assert.deepEqual(results.sort(), [1, 2]);
    assert.equal(runs.count, 3, 'exactly one of the two ran twice');
    assert.deepEqual(await test.db('notes').orderBy('id').pluck('body'), ['a++', 'b++']);
  });

  it('when the work fails for any other reason, it runs once and its error is thrown as it came', async () => {
    let runs = 0;
    await assert.rejects(
      retryingTransaction(test.db, async (trx) => {
        runs += 1;
        await trx('notes').insert({ body: null });
      }),
      (err: { code?: string }) => err.code === '23502',
    );
    assert.equal(runs, 1);
  });

  it('when the work keeps losing races, it gives up after a few runs and throws the conflict (a 503 to the caller)', async () => {
    let runs = 0;
    await assert.rejects(
      retryingTransaction(test.db, async () => {
        runs += 1;
        throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
      }),
      (err: { code?: string }) => isTransactionConflict(err),
    );
    assert.equal(runs, 4);
  });
});
