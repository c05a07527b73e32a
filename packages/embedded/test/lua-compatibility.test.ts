import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Redis } from '@platform/service-kit';
import { type TestRedis, createTestRedis } from '@platform/service-kit/testing';
import { inProcessRedis } from '../src/in-process-redis.ts';

type Evaluator = (lua: string, keys: string[], args: string[]) => Promise<unknown>;
const evaluator = (redis: Redis): Evaluator => (lua, keys, args) => redis.eval(lua, keys.length, ...keys, ...args);

/**
 * What the platform's Lua (packages/auth/src/revocations/lua, the gateway's admission script, identity's
 * caller throttle) may rely on
 * in the embedded fallback's stand-in (ioredis-mock, whose Lua is fengari), held against a real Redis.
 * This is the one place that says what the stand-in does differently: a script follows the rules below,
 * and no script carries a comment of its own about the stand-in. When a rule here stops holding (a new
 * ioredis-mock), the test says so.
 *
 * The one rule: never turn a large number into text inside a script (`tostring`, `..`): fengari's
 * integers have 32 bits, and a number beyond them (any time in milliseconds) is a float there, exact to
 * 2^53 but printed "3400000000000.0". Return numbers as numbers, and concatenate only the strings Redis
 * returned (`HGET`).
 */
describe('Lua in the embedded stand-in (ioredis-mock) against a real Redis: what the platform\'s scripts rely on', () => {
  let real: TestRedis;
  let both: Array<[string, Evaluator]>;

  before(async () => {
    real = await createTestRedis('lua_compatibility');
    both = [
      ['redis', evaluator(real.redis)],
      ['stand-in', evaluator(inProcessRedis({ keyPrefix: `lua-${randomUUID()}:` }))],
    ];
  });
  after(async () => {
    await real.close();
  });

  /** Runs `lua` on both with fresh keys and returns what each answered. */
  const onBoth = async (lua: string, keyCount = 1, args: string[] = []): Promise<Record<string, unknown>> => {
    const answers: Record<string, unknown> = {};
    for (const [who, run] of both) {
      const keys = Array.from({ length: keyCount }, () => `k-${randomUUID()}`);
      answers[who] = await run(lua, keys, args);
    }
    return answers;
  };

  const relied: Array<[string, string, number, string[], unknown]> = [
    ['a table of numbers comes back as an array', 'return {1, 0, 1000, 7}', 0, [], [1, 0, 1000, 7]],
    ['HMGET and HGETALL tables are indexed from 1', "redis.call('HSET', KEYS[1], 'a', 'x', 'b', 'y'); local t = redis.call('HMGET', KEYS[1], 'a', 'b'); return t[2]", 1, [], 'y'],
    ['a missing field is false, not nil', "local v = redis.call('HGET', KEYS[1], 'none'); if v == false then return 1 end; return 0", 1, [], 1],
    ['HSETNX then HGET returns the stored text', "redis.call('HSETNX', KEYS[1], 'born', ARGV[1]); return redis.call('HGET', KEYS[1], 'born')", 1, ['1795701276123'], '1795701276123'],
    ['milliseconds since 1970 compare and divide without overflow', "if tonumber(ARGV[1]) < tonumber(ARGV[2]) / 1000 then return 1 end; return 0", 0, ['1795701276', '1795701277000'], 1],
    ['a sum of milliseconds returned as a number keeps every digit', 'return tonumber(ARGV[1]) + 1', 0, ['1795701276000'], 1795701276001],
    ['EXISTS of several keys counts them', "redis.call('SET', KEYS[1], '1'); return redis.call('EXISTS', KEYS[1], KEYS[2])", 2, [], 1],
    ['SET NX answers false when the key exists', "redis.call('SET', KEYS[1], 'a'); if not redis.call('SET', KEYS[1], 'b', 'NX', 'PX', 1000) then return 1 end; return 0", 1, [], 1],
    ['INCR then PEXPIRE on a new key', "local n = redis.call('INCR', KEYS[1]); redis.call('PEXPIRE', KEYS[1], 60000); return n", 1, [], 1],
    ['a function defined first in the script is called by the body', 'local function twice(x) return x * 2 end\nreturn twice(21)', 0, [], 42],
    [
      'a sorted set scored in milliseconds given as text: ZADD, ZREMRANGEBYSCORE up to a time, ZCARD, and ZRANGE WITHSCORES read back as a number',
      "redis.call('ZADD', KEYS[1], ARGV[1], 'a'); redis.call('ZADD', KEYS[1], ARGV[2], 'b'); redis.call('ZADD', KEYS[1], ARGV[3], 'c'); " +
        "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1]); local e = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES'); " +
        'return { redis.call(\'ZCARD\', KEYS[1]), tonumber(e[2]) + 60000 - tonumber(ARGV[3]) }',
      1,
      ['1795701276000', '1795701290000', '1795701300000'],
      [2, 50000],
    ],
  ];
  for (const [name, lua, keys, args, expected] of relied) {
    it(`relied on, the same on both: ${name}`, async () => {
      assert.deepEqual(await onBoth(lua, keys, args), { redis: expected, 'stand-in': expected });
    });
  }

  it('differs, so scripts avoid it: a number beyond 32 bits turned into text inside the script', async () => {
    assert.deepEqual(await onBoth('return tostring(1700000000000 * 2)', 0), { redis: '3400000000000', 'stand-in': '3400000000000.0' });
    assert.deepEqual(await onBoth("return 'ms=' .. (tonumber(ARGV[1]) + 1)", 0, ['1795701276000']), { redis: 'ms=1795701276001', 'stand-in': 'ms=1795701276001.0' });
    // Small numbers print alike.
    assert.deepEqual(await onBoth('return tostring(1 + 1)', 0), { redis: '2', 'stand-in': '2' });
  });
});
