import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { RevocationsUnavailableError, TOKEN_CLOCK_TOLERANCE_S, createRevocationReader, createRevocationWriter } from '@platform/auth';
import { freshEnvironment, tokenKey } from '@platform/auth/testing';
import { type Redis, closeRedis, createLogger, redisCheck } from '@platform/service-kit';
// The gateway's own claim and release scripts: the stand-in must run exactly what the gateway sends.
import { SIGNED_AHEAD_WINDOW_MS, createAdmissionStore, nonceKey, replayBornKey } from '../../../gateway/src/admission/admission.ts';
import { inProcessRedis } from '../src/in-process-redis.ts';

// Every test names its own prefix, as the deployables of one environment share REDIS_KEY_PREFIX.
const prefix = () => `test-${randomUUID()}:`;
const silent = createLogger({ service: 'test', level: 'silent' });
/** The gateway's admission store on `redis`, with its reader of the revocations. */
const admissionOn = (redis: Redis) =>
  createAdmissionStore(redis, { nonceTtlS: 600, safeTtlS: 600, unsafeTtlS: 86_400, revocations: createRevocationReader(redis, { logger: silent }) });
/** Identity's writer on `redis`, its record of ended sessions empty. */
const writerOn = (redis: Redis) =>
  createRevocationWriter(redis, {
    logger: silent,
    intervalMs: 60_000,
    accessTokenTtlS: 900,
    async *endedSince() {},
  });

describe('the in-process Redis stand-in (embedded fallback)', () => {
  it('is ready for the readiness check, and ends on closeRedis', async () => {
    const redis = inProcessRedis({ keyPrefix: prefix() });
    await redisCheck(redis).check();
    await closeRedis(redis);
    assert.equal(redis.status, 'end');
  });

  it('shares one key space between the clients of the process, under each client\'s prefix', async () => {
    const keyPrefix = prefix();
    const identity = inProcessRedis({ keyPrefix });
    const gateway = inProcessRedis({ keyPrefix });
    const other = inProcessRedis({ keyPrefix: prefix() });
    await identity.set('k', 'v');
    assert.equal(await gateway.get('k'), 'v');
    assert.equal(await other.get('k'), null);
  });

  it('runs the gateway claim script with its per-call key count: the mirror, nonce, idempotency key, then revoked token', async () => {
    const redis = inProcessRedis({ keyPrefix: prefix() });
    const guard = admissionOn(redis);
    const now = Math.floor(Date.now() / 1000);
    const request: Parameters<typeof guard.admit>[0] = {
      keyId: 'k',
      nonce: 'n1',
      idempotencyKey: 'i1',
      method: 'POST',
      token: undefined,
      bearing: false,
      created: now,
      owner: 'a',
      rate: { limit: 100, windowS: 60 },
    };
    const outcome = async (r: Parameters<typeof guard.admit>[0]) => (await guard.admit(r)).outcome;
    // A fresh key space is a Redis that lost its data: one signed before it is refused; one signed ahead of the
    // clock just after it is asked to sign again (its gateway may have admitted it before the loss); once the
    // loss is over SIGNED_AHEAD_WINDOW_MS old, a token request signed after it waits for the re-seed.
    assert.equal(await outcome({ ...request, nonce: 'n0', created: now - 60 }), 'signed-before-loss');
    assert.equal(await outcome({ ...request, nonce: 'n0', bearing: true, created: now + 5 }), 'signed-near-loss');
    await redis.hset(replayBornKey('k'), 'born', String(Date.now() - SIGNED_AHEAD_WINDOW_MS - 1000));
    assert.equal(await outcome({ ...request, nonce: 'n0', bearing: true, created: now + 5 }), 'revocations-restoring');
    // Found in the middle of a second: a signature of that very second, or of the one before (the loss may
    // have come before it was found), is asked to sign again; the second before those is over.
    await redis.hset(replayBornKey('k'), 'born', String(now * 1000 + 500));
    assert.equal(await outcome({ ...request, nonce: 'n0', created: now }), 'signed-near-loss');
    assert.equal(await outcome({ ...request, nonce: 'n0', created: now - 1 }), 'signed-near-loss');
    assert.equal(await outcome({ ...request, nonce: 'n0', created: now - 2 }), 'signed-before-loss');
    await freshEnvironment(redis, [replayBornKey('k')]);
    assert.equal(await outcome(request), 'claimed');
    // The very call again (a client's resend after a dropped connection: its own owner on the nonce) is answered as before.
    assert.equal(await outcome(request), 'claimed');
    assert.equal(await outcome({ ...request, idempotencyKey: 'i2', owner: 'b' }), 'nonce-reused');
    assert.equal(await outcome({ ...request, nonce: 'n2' }), 'key-reused');
    // A 5xx releases the key for a retry, but only for the request that owns it.
    await guard.release({ keyId: 'k', idempotencyKey: 'i1', owner: 'someone else' });
    assert.equal(await outcome({ ...request, nonce: 'n3' }), 'key-reused');
    await guard.release({ keyId: 'k', idempotencyKey: 'i1', owner: 'a' });
    assert.equal(await outcome({ ...request, nonce: 'n4' }), 'claimed');

    const token = { tokenId: randomUUID(), sessionId: randomUUID() };
    const withToken = { ...request, idempotencyKey: 'i5', token, bearing: true };
    assert.equal(await outcome({ ...withToken, nonce: 'n5' }), 'claimed');
    const writer = writerOn(redis);
    await writer.endSessions([token.sessionId], Date.now() / 1000 + 60);
    assert.equal(await outcome({ ...withToken, nonce: 'n6', idempotencyKey: 'i6' }), 'token-revoked');
    await writer.stop();
    await guard.stop();
  });

  it('runs the rate limit of the claim script on its clock: the limit admitted, then 429 without a claim', async () => {
    const redis = inProcessRedis({ keyPrefix: prefix() });
    const guard = admissionOn(redis);
    await freshEnvironment(redis, [replayBornKey('k')]);
    const created = Math.floor(Date.now() / 1000);
    const claim = (i: number) => guard.admit({ keyId: 'k', nonce: `n${i}`, idempotencyKey: `i${i}`, method: 'GET', token: undefined, bearing: false, created, owner: 'a', rate: { limit: 3, windowS: 60 } });
    const claims = [await claim(1), await claim(2), await claim(3), await claim(4)];
    assert.deepEqual(claims.map((c) => c.outcome), ['claimed', 'claimed', 'claimed', 'rate-limited']);
    assert.deepEqual(claims.map((c) => c.quota?.remaining), [2, 1, 0, 0]);
    const wait = claims[3]?.quota?.resetMs ?? 0;
    assert.ok(wait > 54_000 && wait <= 66_000, `retry in ${wait} ms`);
    // The refused request's nonce was not burnt.
    assert.equal(await redis.exists(nonceKey('k', 'n4')), 0);
    await guard.stop();
  });

  it('keeps the blacklist with EXAT and finds a token by either of its keys, behind its bucket\'s ledger (the Lua scripts)', async () => {
    const redis = inProcessRedis({ keyPrefix: prefix() });
    const reader = createRevocationReader(redis, { logger: silent });
    const token = { tokenId: randomUUID(), sessionId: randomUUID() };
    // A fresh key space is a Redis that lost its data: not whole until identity's writer has re-seeded it.
    await assert.rejects(reader.isRevoked(token), RevocationsUnavailableError);
    const writer = writerOn(redis);
    await writer.checkNow();
    assert.equal(await reader.isRevoked(token), false);
    await writer.revoke(token, Math.floor(Date.now() / 1000) + 60);
    assert.equal(await reader.isRevoked(token), true);
    // Kept past the token's exp by twice the verifiers' clock tolerance (token-lifetime.ts).
    const ttl = await redis.ttl(tokenKey(token));
    assert.ok(ttl > 60 && ttl <= 61 + 2 * TOKEN_CLOCK_TOLERANCE_S, `ttl ${ttl}`);
    await writer.stop();
    await reader.stop();
  });

  it('answers the identity service\'s commands as Redis does: SET NX EX/PX, TTL, MULTI INCR EXPIRE, MGET, DECR', async () => {
    const redis = inProcessRedis({ keyPrefix: prefix() });
    assert.equal(await redis.set('cooldown', '1', 'EX', 60, 'NX'), 'OK');
    assert.equal(await redis.set('cooldown', '1', 'EX', 60, 'NX'), null);
    assert.equal(await redis.ttl('cooldown'), 60);
    assert.deepEqual(await redis.multi().incr('a').expire('a', 120).incr('b').expire('b', 120).exec(), [
      [null, 1],
      [null, 1],
      [null, 1],
      [null, 1],
    ]);
    assert.deepEqual(await redis.mget('a', 'b', 'c'), ['1', '1', null]);
    assert.equal(await redis.decr('a'), 0);
    assert.equal(await redis.set('short', '1', 'PX', 30, 'NX'), 'OK');
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(await redis.get('short'), null, 'PX expiry');
  });
});
