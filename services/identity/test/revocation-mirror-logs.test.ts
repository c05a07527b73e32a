import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { closeRedis, createLogger, createRedis } from '@platform/service-kit';
import { captureLogger, createTestDatabase } from '@platform/service-kit/testing';
import { migrations } from '../migrations/index.ts';
import { startRevocations } from '../src/sessions/revocations.ts';

/** A TCP port nothing listens on: a Redis that is down. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// While Redis is down every check of the mirror fails (each REVOCATION_MIRROR_CHECK_MS); the log says so once,
// with the reason, then reminds at most every `reminderMs` (a minute in production), never with a stack.
// test/reliability/faults-redis-logs.test.ts counts the lines of a real process through a whole outage.
describe('the revocation mirror keeper while its checks keep failing', () => {
  it('logs the first failure with its reason, then a reminder at most every reminderMs: not a line (and a stack) per check', async () => {
    const database = await createTestDatabase('identity', migrations);
    const redis = createRedis({ url: `redis://127.0.0.1:${await closedPort()}/0`, keyPrefix: 'keeper-logs:', logger: createLogger({ service: 'test', level: 'silent' }) });
    const log = captureLogger('identity');
    const started = Date.now();
    const keeper = startRevocations({ db: database.db, redis, accessTokenTtlS: 900, intervalMs: 20, reminderMs: 400, logger: log.logger });
    try {
      await sleep(1000);
      const elapsed = Date.now() - started;
      const lines = log.lines().filter((l) => String(l.msg).startsWith('revocation mirror'));
      assert.equal(lines[0]?.msg, 'revocation mirror not checked (Redis or Postgres unreachable); bearer requests stay failed closed');
      const reminders = lines.slice(1);
      assert.ok(reminders.length >= 1 && reminders.length <= Math.floor(elapsed / 400), `${reminders.length} reminders in ${elapsed} ms (about 50 checks)`);
      for (const line of reminders) assert.match(String(line.msg), /^revocation mirror still not checked/);
      for (const line of lines) {
        assert.equal(typeof line.reason, 'string', JSON.stringify(line));
        assert.equal(line.err, undefined, 'the whole error, with its stack, is logged');
      }
      assert.ok(Number(reminders[0]?.downForMs) >= 400);
    } finally {
      await keeper.stop();
      await closeRedis(redis);
      await database.drop();
    }
  });
});
