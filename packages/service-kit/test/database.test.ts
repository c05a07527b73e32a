import assert from 'node:assert/strict';
import { ensureDatabaseExists, type Migration } from '../src/database.ts';
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
