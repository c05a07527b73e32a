import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { dropDatabase } from '@platform/service-kit/database';
import { uniqueName } from '@platform/service-kit/testing';
import { type PrivateRedis, startPrivateRedis } from '@platform/stack';
import { testDatabaseUrl } from '../support/processes.ts';
import { eventually } from './support/ports.ts';
import { type ServiceProcess, startProcess } from './support/service-process.ts';

/** How long Redis stays down: many of identity's revocation-mirror checks (REVOCATION_MIRROR_CHECK_MS, 1 s). */
const OUTAGE_MS = 6000;

// What an operator reads while Redis is down: identity says so once, with the reason, and once more when it
// is back; no line a second, no stack trace (issue 29: a stack trace every second of an outage).
describe('identity\'s log while Redis is down (a real process on a private redis-server)', function () {
  this.timeout(60_000);
  let redis: PrivateRedis;
  let identity: ServiceProcess;
  const database = testDatabaseUrl(uniqueName('redis_logs'));

  before(async () => {
    redis = await startPrivateRedis();
    identity = await startProcess('identity', { REDIS_URL: redis.url, IDENTITY_DATABASE_URL: database, BCRYPT_COST: '4', LOG_LEVEL: 'info' });
    assert.ok(await eventually(async () => (await fetch(`${identity.url}/health/ready`)).status === 200, 15_000, 100), identity.output());
  });
  after(async () => {
    await identity?.stop();
    await redis?.stop();
    await dropDatabase(database);
  });

  /** The JSON lines identity wrote from `offset` of its output on. */
  const linesFrom = (offset: number) =>
    identity
      .output()
      .slice(offset)
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);

  it(`writes one line when its revocation checks start failing, with the reason and no stack, and one when Redis is back: not one per check during ${OUTAGE_MS / 1000} s`, async () => {
    const offset = identity.output().length;
    await redis.kill();
    await sleep(OUTAGE_MS);
    const during = linesFrom(offset);
    await redis.restart();
    assert.ok(await eventually(async () => (await fetch(`${identity.url}/health/ready`)).status === 200, 10_000, 100), 'identity never got ready again');
    await sleep(1500);
    const all = linesFrom(offset);

    const mirror = (lines: Array<Record<string, unknown>>) => lines.filter((l) => String(l.msg).includes('revocation mirror'));
    assert.deepEqual(mirror(during).map((l) => [l.level, l.msg]), [['warn', 'revocation mirror not checked (Redis or Postgres unreachable); bearer requests stay failed closed']], JSON.stringify(during));
    assert.match(String(mirror(during)[0]!.reason), /\S/, 'the line names the reason');
    const back = mirror(all).slice(1);
    assert.equal(back.length, 1, JSON.stringify(back));
    assert.match(String(back[0]!.msg), /^revocation mirror (checked again|re-seeded)/);
    // No stack trace anywhere, and nothing that repeats with each check or reconnect attempt.
    assert.deepEqual(all.filter((l) => JSON.stringify(l).includes('\\n    at ')).map((l) => l.msg), []);
    assert.ok(during.length <= 4, `${during.length} lines in ${OUTAGE_MS / 1000} s of outage:\n${during.map((l) => JSON.stringify(l)).join('\n')}`);
  });
});
