import assert from 'node:assert/strict';
import request from 'supertest';
import { dropDatabase } from '@platform/service-kit/database';
import { STATION_GENERATION_KEY, lowerStationGeneration, newestStationGeneration, publishStationGeneration, storedStationGeneration } from '@platform/service-kit';
import { captureLogger, createTestDatabase, createTestRedis } from '@platform/service-kit/testing';
import { migrations } from '../migrations/index.ts';
import { seedStationData } from '../seeds/station-data.ts';
import { type StationIndexLoader, createStationIndexLoader } from '../src/weather-stations/station-index-loader.ts';
import { type RiskTestContext, startRiskTestContext } from './support/risk-test-context.ts';

const POLL_MS = 100;

/** Resolves once `condition` holds; fails the test if it never does within `timeoutMs`. */
async function eventually(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, POLL_MS / 2));
  }
}

describe('the in-memory station index', () => {
  let ctx: RiskTestContext;

  before(async () => {
    ctx = await startRiskTestContext('risk_reload', { pollIntervalMs: POLL_MS });
  });
  after(async () => {
    await ctx.close();
  });

  const get = (url: string, path: string) => request(url).get(path).set('Authorization', ctx.auth());
  /**
   * Renames station 17130 to `name` and has the first replica's poll come (it publishes the new generation, then
   * serves it): the second follows within 1.5 s, long before its own poll.
   */
  const secondFollowsRename = async (first: StationIndexLoader, second: StationIndexLoader, name: string) => {
    const before = second.current()!.version;
    await ctx.database.db('stations').where({ station_id: 17130 }).update({ station_name: name });
    assert.equal(await first.refresh(), true);
    const published = Date.now();
    await eventually(async () => second.current()!.version > before, 3000);
    assert.ok(Date.now() - published < 1500, `the second replica followed after ${Date.now() - published} ms`);
  };

  it('when a station is added to the tables, is rebuilt and answers it, with no failed request in between', async () => {
    const statuses: number[] = [];
    let done = false;
    // Requests keep coming while the index is rebuilt and swapped.
    const traffic = (async () => {
      while (!done) {
        statuses.push((await get(ctx.url, '/v1/weather-stations/by/id/17130')).status);
        const res = await request(ctx.url)
          .post('/v1/weather-stations/by/city-district')
          .set('Authorization', ctx.auth())
          .send({ city: 'Ankara', district: 'Çankaya' });
        statuses.push(res.status);
      }
    })();
    try {
      const versionBefore = ctx.stations.current()!.version;
      await ctx.database.db.transaction(async (trx) => {
        await trx('stations').insert({ station_id: 99_501, station_name: 'Test Tepesi', latitude: 39.9, longitude: 32.86, city: 'Ankara', district: 'Çankaya' });
        await trx('mgm_centers').insert({
          merkez_id: 99_501,
          center_name: 'Test Tepesi',
          city: 'Ankara',
          plate_code: 6,
          district: 'Çankaya',
          is_district_centre: false,
          latitude: 39.9,
          longitude: 32.86,
          observation_station_id: 99_501,
        });
      });
      await eventually(async () => (await get(ctx.url, '/v1/weather-stations/by/id/99501')).status === 200);
      assert.ok(ctx.stations.current()!.version > versionBefore);
    } finally {
      done = true;
      await traffic;
    }
    assert.ok(statuses.length > 0);
    assert.deepEqual(
      statuses.filter((s) => s !== 200),
      [],
    );
    const res = await request(ctx.url)
      .post('/v1/weather-stations/by/city-district')
      .set('Authorization', ctx.auth())
      .send({ city: 'ankara', district: 'cankaya' });
    assert.ok((res.body as Array<{ stationId: number }>).some((s) => s.stationId === 99_501));
  });

  it('when a station is renamed in the table, answers the new name after the next poll', async () => {
    await ctx.database.db('stations').where({ station_id: 17130 }).update({ station_name: 'Keçiören (Ankara Bölge)' });
    await eventually(async () => (await get(ctx.url, '/v1/weather-stations/by/id/17130')).body.stationName === 'Keçiören (Ankara Bölge)');
  });

  it('when a change would make two names match the same spellings, keeps serving the previous index and logs why', async () => {
    const version = ctx.stations.current()!.version;
    await ctx.database.db('districts').insert({ city: 'Ankara', district: 'CANKAYA', plate_code: 6 });
    try {
      assert.equal(await ctx.stations.refresh(), false);
      assert.equal(ctx.stations.current()!.version, version);
      assert.equal((await get(ctx.url, '/v1/weather-stations/get-districts-of/Ankara')).status, 200);
      const failure = ctx.log.lines().find((l) => String(l.msg).startsWith('station index reload failed'));
      assert.match(String((failure?.err as { message?: string } | undefined)?.message), /"Çankaya" and "CANKAYA" match the same spellings/);
    } finally {
      await ctx.database.db('districts').where({ city: 'Ankara', district: 'CANKAYA' }).delete();
    }
    await eventually(async () => ctx.stations.current()!.version > version);
  });

  it('when the generation cannot be published (Redis down), logs the failed reload once at warn with Redis\'s reason, no stack; another failure at error with it', async () => {
    const log = captureLogger('risk');
    let failure: Error | undefined;
    const publish = async () => {
      if (failure !== undefined) throw failure;
    };
    const loader = createStationIndexLoader({ db: ctx.database.db, logger: log.logger, pollIntervalMs: 60_000, publish });
    try {
      await loader.start();
      failure = new Error("Stream isn't writeable and enableOfflineQueue options is false");
      assert.equal(await loader.refresh(), false);
      assert.equal(await loader.refresh(), false);
      const said = log.lines().filter((l) => String(l.msg).startsWith('station index reload failed'));
      assert.deepEqual(said.map((l) => l.level), ['warn', 'debug']);
      assert.equal(said[0]?.reason, failure.message);
      assert.equal(said[0]?.err, undefined);
      failure = undefined;
      await loader.refresh();
      failure = new Error('the generation key holds a list');
      await loader.refresh();
      const fault = log.lines().filter((l) => String(l.msg).startsWith('station index reload failed')).at(-1);
      assert.equal(fault?.level, 'error');
      assert.match(String((fault?.err as { stack?: string } | undefined)?.stack), /holds a list/);
    } finally {
      await loader.stop();
    }
  });

  it('a replica follows the newest generation another one published within about a second, long before its own next poll', async () => {
    // Redis's generation key, as the replicas share it (publishStationGeneration raises it, never lowers it).
    let stored: number | undefined;
    const publish = async (version: number) => {
      stored = Math.max(stored ?? 0, version);
    };
    const first = createStationIndexLoader({ db: ctx.database.db, logger: ctx.log.logger, pollIntervalMs: 60_000, publish, newest: async () => stored });
    const second = createStationIndexLoader({ db: ctx.database.db, logger: ctx.log.logger, pollIntervalMs: 60_000, publish, newest: async () => stored });
    try {
      await Promise.all([first.start(), second.start()]);
      await secondFollowsRename(first, second, 'Keçiören (izlenen)');
      assert.equal(second.current()!.version, first.current()!.version);
    } finally {
      await Promise.all([first.stop(), second.stop()]);
    }
  });

  it('a stored generation above the database\'s (a restored database, a hand-written key) or no whole number is set back to it once it stayed so for a poll interval, and a replica follows another again', async () => {
    // Redis's generation key through the helpers risk uses; it was only ever raised, so it stayed above them all.
    const testRedis = await createTestRedis('risk-generation');
    const { redis } = testRedis;
    const shared = {
      db: ctx.database.db,
      logger: ctx.log.logger,
      publish: (version: number) => publishStationGeneration(redis, version),
      newest: () => newestStationGeneration(redis),
      stored: () => storedStationGeneration(redis),
      lower: (from: string, to: number) => lowerStationGeneration(redis, from, to),
    };
    const first = createStationIndexLoader({ ...shared, pollIntervalMs: 300 });
    // The follower: its own poll a minute away.
    const second = createStationIndexLoader({ ...shared, pollIntervalMs: 60_000 });
    const stored = () => redis.get(STATION_GENERATION_KEY);
    try {
      await Promise.all([first.start(), second.start()]);
      await redis.set(STATION_GENERATION_KEY, '999999999');
      // One poll finding it above is not enough (a replica that read the database just before a change would be wrong).
      assert.equal(await first.refresh(), false);
      assert.equal(await first.refresh(), false);
      assert.equal(await stored(), '999999999');
      await eventually(async () => (await stored()) === String(first.current()!.version), 3000);
      assert.equal(ctx.log.lines().filter((line) => line.stored === '999999999' && line.version === first.current()!.version).length, 1, 'the correction is logged once');
      // Following works again.
      await secondFollowsRename(first, second, 'Keçiören (geri yüklendi)');
      // Other forms than a whole number (the attack on the first version of this: `1e9`, beyond a safe integer, text) go the same way.
      for (const text of ['1e9', '99999999999999999999', 'garbage']) {
        await redis.set(STATION_GENERATION_KEY, text);
        await eventually(async () => (await stored()) === String(first.current()!.version), 3000);
      }
    } finally {
      await Promise.all([first.stop(), second.stop()]);
      await testRedis.close();
    }
  });

  it('before the index is loaded, /health/ready answers 503 naming it and station requests 503; after loading, 200', async () => {
    const loader = createStationIndexLoader({ db: ctx.database.db, logger: ctx.log.logger, pollIntervalMs: 60_000 });
    const url = await ctx.serve({ stations: loader });
    const notReady = await request(url).get('/health/ready');
    assert.equal(notReady.status, 503);
    assert.deepEqual(notReady.body.messages, ['station-index is unreachable']);
    const early = await get(url, '/v1/weather-stations/get-cities');
    assert.equal(early.status, 503);
    assert.deepEqual(early.body.messages, ['Station data is not loaded yet; try again shortly']);
    assert.equal(early.headers['retry-after'], '1', 'a retry cures it: the answer says when');

    assert.equal(await loader.refresh(), true);
    assert.equal((await request(url).get('/health/ready')).status, 200);
    assert.equal((await get(url, '/v1/weather-stations/get-cities')).status, 200);
    await loader.stop();
  });

  it('when Postgres becomes unavailable after the index loaded, stays ready and keeps answering from the index', async () => {
    const database = await createTestDatabase('risk_pg_gone', migrations);
    await seedStationData(database.db);
    const log = captureLogger('risk');
    const loader = createStationIndexLoader({ db: database.db, logger: log.logger, pollIntervalMs: 50 });
    try {
      await loader.start();
      const url = await ctx.serve({ stations: loader });
      // Gone for good: the database is dropped under the open pool.
      await dropDatabase(database.url);
      await eventually(async () => log.text().includes('station index reload failed; serving the previous index'));

      assert.equal((await request(url).get('/health/ready')).status, 200);
      const station = await get(url, '/v1/weather-stations/by/id/17128');
      assert.equal(station.status, 200);
      assert.equal(station.body.stationId, 17128);
      const stations = await request(url)
        .post('/v1/weather-stations/by/city-district')
        .set('Authorization', ctx.auth())
        .send({ city: 'İstanbul', district: 'Bağcılar' });
      assert.equal(stations.status, 200);
      assert.ok((stations.body as Array<{ stationId: number }>).some((s) => s.stationId === 17814));
      assert.equal((await get(url, '/v1/weather-stations/nearest?latitude=40.128&longitude=32.995')).body[0].stationId, 17128);
    } finally {
      await loader.stop();
      await database.db.destroy();
    }
  });
});
