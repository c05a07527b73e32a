import assert from 'node:assert/strict';
import { ServiceUnavailableError, TooManyRequestsError } from '@platform/errors';
import { closeRedis } from '@platform/service-kit';
import { type TestRedis, createTestRedis, unreachableRedis } from '@platform/service-kit/testing';
import { type Caller, type CallerThrottle, createCallerThrottle } from '../src/request/caller-throttle.ts';

const WINDOW_S = 60;
const LIMIT = 3;

/**
 * The per-caller throttle (failed logins, reset requests) on a real Redis, its clock in the test's hands: a
 * sliding window, so no span of the window's length ever holds more than the limit, the turn of a clock
 * minute included; concurrent consumers pass no more than the limit; Retry-After says when the oldest event
 * that holds the caller back ages out.
 */
describe('caller throttle: a sliding window per client key and per address', () => {
  let testRedis: TestRedis;
  let clock: number;
  let throttle: CallerThrottle;
  let callers = 0;
  /** A caller of its own: an address no other test uses, and a client key when asked. */
  const newCaller = (clientKeyId?: string): Caller => {
    callers += 1;
    return { address: `192.0.2.${callers}`, clientKeyId };
  };
  const at = (seconds: number) => {
    clock = 1_800_000_000_000 + seconds * 1000;
  };
  /** One event of `caller` consumed at each of `seconds`. */
  async function consumeAt(caller: Caller, seconds: readonly number[]): Promise<void> {
    for (const second of seconds) {
      at(second);
      await throttle.consume(caller);
    }
  }
  /** The Retry-After of the 429 `attempt` throws, or 'allowed'. */
  async function outcome(attempt: Promise<void>): Promise<number | 'allowed'> {
    try {
      await attempt;
      return 'allowed';
    } catch (err) {
      if (!(err instanceof TooManyRequestsError)) throw err;
      assert.equal(err.message, 'Too many attempts');
      return err.retryAfterSeconds;
    }
  }

  before(async () => {
    testRedis = await createTestRedis('throttle');
    throttle = createCallerThrottle(testRedis.redis, { name: 'test', limit: LIMIT, windowS: WINDOW_S, message: 'Too many attempts', unavailableMessage: 'Unavailable', now: () => clock });
  });
  after(async () => {
    await testRedis?.close();
  });

  it('events across the turn of a clock minute count together: three at 0:50, 0:55 and 1:05 hold back a fourth until 1:50', async () => {
    const caller = newCaller();
    await consumeAt(caller, [50, 55, 65]);
    at(70);
    assert.equal(await outcome(throttle.assertAllowed(caller)), 40, 'the first event ages out at 1:50');
    at(109.999);
    assert.equal(await outcome(throttle.assertAllowed(caller)), 1);
    at(110);
    assert.equal(await outcome(throttle.assertAllowed(caller)), 'allowed');
  });

  it('consume takes the limit and no more, also when the requests come at once, and a refusal is not counted', async () => {
    const caller = newCaller();
    at(0);
    const answers = await Promise.all(Array.from({ length: 10 }, () => outcome(throttle.consume(caller))));
    assert.equal(answers.filter((a) => a === 'allowed').length, LIMIT, answers.join(' '));
    assert.ok(answers.every((a) => a === 'allowed' || a === WINDOW_S), answers.join(' '));
    // The refused seven were not counted: once the three age out, three more pass.
    at(WINDOW_S);
    const later = await Promise.all(Array.from({ length: 4 }, () => outcome(throttle.consume(caller))));
    assert.deepEqual(later.filter((a) => a === 'allowed').length, LIMIT, later.join(' '));
  });

  it('the client key and the address are counted apart: a key spent from many addresses refuses a fresh address under it, not the address under another key', async () => {
    at(0);
    for (let i = 0; i < LIMIT; i += 1) await throttle.consume(newCaller('bulk-key'));
    const fresh = newCaller('bulk-key');
    assert.equal(await outcome(throttle.assertAllowed(fresh)), WINDOW_S);
    assert.equal(await outcome(throttle.assertAllowed({ ...fresh, clientKeyId: 'other-key' })), 'allowed');
    assert.equal(await outcome(throttle.assertAllowed({ address: fresh.address, clientKeyId: undefined })), 'allowed');
  });

  it('a request refused by one subject is not counted by the other: a full address leaves a fresh key whole, and a full key a fresh address', async () => {
    at(0);
    const full = newCaller();
    for (let i = 0; i < LIMIT; i += 1) await throttle.consume(full);
    // Refused by the address, many times and at once: the key 'fresh-key' counts none of them.
    const refused = await Promise.all(Array.from({ length: 6 }, () => outcome(throttle.consume({ ...full, clientKeyId: 'fresh-key' }))));
    assert.deepEqual(refused, Array.from({ length: 6 }, () => WINDOW_S));
    const underFreshKey = await Promise.all(Array.from({ length: LIMIT }, () => outcome(throttle.consume(newCaller('fresh-key')))));
    assert.deepEqual(underFreshKey, Array.from({ length: LIMIT }, () => 'allowed'), 'the refused requests were counted by the key');
    // The key is full now: refused under it, a fresh address counts none of them.
    const address = newCaller().address;
    for (let i = 0; i < 4; i += 1) assert.equal(await outcome(throttle.consume({ address, clientKeyId: 'fresh-key' })), WINDOW_S);
    const alone = await Promise.all(Array.from({ length: LIMIT }, () => outcome(throttle.consume({ address, clientKeyId: undefined }))));
    assert.deepEqual(alone, Array.from({ length: LIMIT }, () => 'allowed'), 'the refused requests were counted by the address');
  });

  it('Retry-After is the time until the oldest event that holds the caller back ages out, never below a second', async () => {
    const caller = newCaller();
    await consumeAt(caller, [0, 10, 20]);
    at(45);
    assert.equal(await outcome(throttle.assertAllowed(caller)), 15);
    at(59.5);
    assert.equal(await outcome(throttle.consume(caller)), 1);
    at(60);
    assert.equal(await outcome(throttle.consume(caller)), 'allowed');
  });

  it('a reserved event counts at once and is gone when released: checks running at once pass no more than the limit, the released ones free their place', async () => {
    const caller = newCaller('reserving-key');
    at(0);
    const reservations = await Promise.all(Array.from({ length: 8 }, () => throttle.reserve(caller).then((r) => r, (err: unknown) => err)));
    const held = reservations.filter((r): r is { release: () => Promise<void> } => !(r instanceof Error));
    assert.equal(held.length, LIMIT);
    assert.ok(reservations.filter((r) => r instanceof TooManyRequestsError).length === 8 - LIMIT);
    assert.equal(await outcome(throttle.assertAllowed(caller)), WINDOW_S);
    // Two turn out to be none (the password was right): their places are free again, under the key and the address.
    await held[0]!.release();
    await held[1]!.release();
    assert.equal(await outcome(throttle.consume(caller)), 'allowed');
    assert.equal(await outcome(throttle.consume({ ...caller, clientKeyId: undefined })), 'allowed');
    assert.equal(await outcome(throttle.consume(caller)), WINDOW_S);
  });

  it('a Redis that cannot count refuses with 503, never lets an attempt through unchecked', async () => {
    const down = unreachableRedis();
    try {
      const blind = createCallerThrottle(down, { name: 'test', limit: LIMIT, windowS: WINDOW_S, message: 'Too many attempts', unavailableMessage: 'Unavailable', now: () => clock });
      for (const attempt of [blind.assertAllowed(newCaller()), blind.consume(newCaller()), blind.reserve(newCaller())]) {
        await assert.rejects(attempt, (err: unknown) => err instanceof ServiceUnavailableError && err.message === 'Unavailable');
      }
    } finally {
      await closeRedis(down);
    }
  });
});
