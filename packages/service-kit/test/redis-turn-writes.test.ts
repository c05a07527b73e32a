import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type * as IORedis from 'ioredis';
import { closeRedis, createLogger, createRedis, turnWrites, waitForRedis } from '../src/index.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0';
const logger = createLogger({ service: 'test', level: 'silent' });

/** The connection's socket, as turnWrites holds it. */
const socketOf = (redis: IORedis.Redis) => redis.stream;

describe('turnWrites: the commands of one event-loop turn in one socket write', () => {
  const prefix = `turn-writes-test:${process.pid}:`;
  let redis: IORedis.Redis;

  before(async () => {
    redis = createRedis({ url: REDIS_URL, keyPrefix: prefix, logger, autoPipelining: false, commandTimeoutMs: 300 }) as IORedis.Redis;
    assert.ok(await waitForRedis(redis, 5000), 'Redis is not reachable');
  });

  after(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys.map((key) => key.slice(prefix.length)));
    await closeRedis(redis);
  });

  it('holds what is written until the turn ends, then sends it all at once, in order', async () => {
    const hold = turnWrites(redis);
    hold();
    hold();
    assert.equal(socketOf(redis).writableCorked, 1, 'a turn holds the socket once, however often it is asked');
    const answers = Promise.all(Array.from({ length: 50 }, () => redis.incr('counter')));
    assert.ok(socketOf(redis).writableLength > 0, 'the commands wait in the socket buffer');
    await nextTurn();
    assert.equal(socketOf(redis).writableCorked, 0, 'released at the end of the turn');
    assert.deepEqual(await answers, Array.from({ length: 50 }, (_, at) => at + 1));
    // The next turn holds again.
    hold();
    assert.equal(socketOf(redis).writableCorked, 1);
    assert.equal(await redis.incr('counter'), 51);
  });

  it('leaves each held command its own timeout when Redis does not answer', async () => {
    // The connection is held up by the server: a BLPOP with nothing to pop blocks it for 2 s, and every
    // command sent after it waits behind it (only this connection: a CLIENT PAUSE would freeze every client
    // of the shared Redis, the tests running beside this one included).
    const id = String(await redis.client('ID'));
    const blocked = redis.blpop('nothing-to-pop', 2).catch(() => undefined);
    const hold = turnWrites(redis);
    const started = Date.now();
    hold();
    const outcome = await redis.incr('frozen').then(
      () => 'answered',
      (err: unknown) => (err instanceof Error ? err.message : String(err)),
    );
    const tookMs = Date.now() - started;
    assert.match(outcome, /timed out/i);
    assert.ok(tookMs < 1000, `the held command waited ${tookMs} ms, beyond its 300 ms timeout`);
    // Its connection is let go at once, for the rest of the file.
    const admin = createRedis({ url: REDIS_URL, keyPrefix: '', logger, autoPipelining: false }) as IORedis.Redis;
    try {
      assert.ok(await waitForRedis(admin, 5000));
      await admin.client('UNBLOCK', id);
    } finally {
      await closeRedis(admin);
    }
    await blocked;
  });

  it('does nothing to a client without a connection: its commands fail at once, as without it', async () => {
    const closed = createRedis({ url: 'redis://127.0.0.1:1/0', keyPrefix: prefix, logger, autoPipelining: false, commandTimeoutMs: 300 });
    try {
      const hold = turnWrites(closed);
      assert.doesNotThrow(hold);
      const started = Date.now();
      await assert.rejects(closed.get('anything'));
      assert.ok(Date.now() - started < 250, 'a command with no connection waited');
    } finally {
      closed.disconnect();
    }
  });
});
