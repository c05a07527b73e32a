import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Knex } from '@platform/service-kit/database';
import { type TestDatabase, createTestDatabase } from '@platform/service-kit/testing';
import { migrations } from '../migrations/index.ts';
import { seedStationData } from '../seeds/station-data.ts';

const riskRoot = fileURLToPath(new URL('..', import.meta.url));

/** Row counts and a digest of every row, so "the same tables" means the same contents, not just sizes. */
async function snapshot(db: Knex) {
  const digest = async (table: string, key: string) =>
    (await db.raw<{ rows: Array<{ md5: string }> }>(`SELECT md5(string_agg(t::text, '|' ORDER BY ${key})) FROM ${table} t`)).rows[0]!.md5;
  const count = async (query: Knex.QueryBuilder) => Number(((await query) as Array<{ n: string }>)[0]!.n);
  return {
    stations: await count(db('stations').count({ n: '*' })),
    centres: await count(db('mgm_centers').count({ n: '*' })),
    districts: await count(db('districts').count({ n: '*' })),
    cities: await count(db('districts').countDistinct({ n: 'city' })),
    digests: [
      await digest('stations', 'station_id'),
      await digest('mgm_centers', 'merkez_id'),
      await digest('districts', 'city, district'),
    ],
  };
}

/** Runs `pnpm --filter @platform/risk seed`'s command against the test database. */
async function runSeedCommand(url: string): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--conditions=development', 'src/seed.ts'], {
    cwd: riskRoot,
    env: { ...process.env, APP_ENV: 'test', RISK_DATABASE_URL: url, LOG_LEVEL: 'info' },
  });
  return stdout;
}

describe('seeding the station data', () => {
  let database: TestDatabase;

  before(async () => {
    database = await createTestDatabase('risk_seed', migrations);
  });
  after(async () => {
    await database.drop();
  });

  it('loads the 1026 stations, 1085 MGM centres and 973 districts of 81 cities; a second run leaves the same tables', async () => {
    const counts = await seedStationData(database.db);
    assert.deepEqual(counts, { stations: 1026, centres: 1085, districts: 973 });
    const first = await snapshot(database.db);
    assert.deepEqual({ ...first, digests: undefined }, { stations: 1026, centres: 1085, districts: 973, cities: 81, digests: undefined });

    await seedStationData(database.db);
    assert.deepEqual(await snapshot(database.db), first);
  });

  it('when a row was changed or removed by hand, a seed restores the files\' contents', async () => {
    const before = await snapshot(database.db);
    await database.db('mgm_centers').where({ observation_station_id: 17814 }).delete();
    await database.db('stations').where({ station_id: 17130 }).update({ station_name: 'Changed' });
    assert.notDeepEqual(await snapshot(database.db), before);
    await seedStationData(database.db);
    assert.deepEqual(await snapshot(database.db), before);
  });

  it('the seed command loads the files, and running it twice leaves the same tables', async () => {
    await database.db('mgm_centers').delete();
    const output = await runSeedCommand(database.url);
    assert.match(output, /"stations":1026,.*"msg":"station data seeded"/);
    const once = await snapshot(database.db);
    assert.equal(once.centres, 1085);
    await runSeedCommand(database.url);
    assert.deepEqual(await snapshot(database.db), once);
  });

  it('every write statement on a station table bumps station_data_version, inside its transaction', async () => {
    const version = async () => Number((await database.db('station_data_version').first('version'))!.version);
    const start = await version();
    await database.db('stations').where({ station_id: 17130 }).update({ station_name: 'Keçiören' });
    assert.equal(await version(), start + 1);
    await database.db('districts').where({ city: 'Ankara', district: 'Keçiören' }).update({ plate_code: 6 });
    assert.equal(await version(), start + 2);
    await database.db('mgm_centers').where({ merkez_id: -1 }).delete();
    assert.equal(await version(), start + 3);
    await assert.rejects(
      database.db.transaction(async (trx) => {
        await trx('stations').where({ station_id: 17130 }).update({ station_name: 'Rolled back' });
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.equal(await version(), start + 3);
  });
});
