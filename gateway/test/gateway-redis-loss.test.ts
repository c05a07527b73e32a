import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { REVOCATIONS_RESTORING_MESSAGE, createRevocationReader } from '@platform/auth';
import { type Redis, closeRedis, createLogger, createRedis, waitForRedis } from '@platform/service-kit';
import { ALL_BUCKETS, freshEnvironment, ledgerKey } from '@platform/auth/testing';
import { startPrivateRedis } from '@platform/stack';
import { type TestRedis, createTestRedis, nextReady } from '@platform/service-kit/testing';
import { SIGNED_AHEAD_WINDOW_MS, createAdmissionStore, idempotencyRedisKey, nonceKey, replayBornKey } from '../src/admission/admission.ts';
import { SIGNED_NEAR_LOSS_MESSAGE } from '../src/admission/admit.step.ts';
import { type Answer, type TestGateway, send, startGateway } from './support/gateway-harness.ts';
import { type TestSigningKey, newIdempotencyKey, newNonce, signedHeaders } from './support/signing-client.ts';
import { type TcpProxy, startTcpProxy } from '../../test/reliability/support/tcp-proxy.ts';

// CONTRACT.md part 13 at the gateway: a Redis found without the revocation mirror (it lost its data) fails
// every request that carries or needs a bearer token closed until identity has re-seeded the mirror, and
// refuses every signature created before the loss. Identity's side is services/identity/test/revocation-mirror.test.ts;
// the whole story through real processes is test/e2e/redis-loss.test.ts.
const silent = createLogger({ service: 'test', level: 'silent' });

describe('gateway when Redis lost its data (CONTRACT.md part 13)', () => {
  let testRedis: TestRedis;
  let gw: TestGateway;

  before(async () => {
    testRedis = await createTestRedis('gw-redis-loss');
    gw = await startGateway({ redis: testRedis.redis });
  });
  afterEach(async () => {
    await freshEnvironment(testRedis.redis, [gw.keys.hmac.keyId, gw.keys.ed25519.keyId].map(replayBornKey));
  });
  after(async () => {
    await gw.close();
    await testRedis.close();
  });

  const cities = '/v1/weather-stations/get-cities';
  const login = '/v1/auth/login';
  const loginBody = Buffer.from('{"username":"a@example.com","password":"secret-1"}');
  const nowS = () => Math.floor(Date.now() / 1000);
  /**
   * A `created` after the loss the test just made, and not ahead of the clock: once the client key's ledger is
   * dated (by the key watch within a second, or by a request) and SIGNED_AHEAD_WINDOW_MS has passed since, the
   * current second. Sooner, a signature of the loss's second is asked to sign again, and so is one signed
   * ahead of the clock (its gateway may have admitted it before the loss: CONTRACT.md part 13, amended).
   */
  const afterLoss = async (keyId = gw.keys.hmac.keyId): Promise<number> => {
    let born = await testRedis.redis.hget(replayBornKey(keyId), 'born');
    while (born === null) {
      await sleep(50);
      born = await testRedis.redis.hget(replayBornKey(keyId), 'born');
    }
    const wait = Number(born) + SIGNED_AHEAD_WINDOW_MS + 50 - Date.now();
    if (wait > 0) await sleep(wait);
    return nowS();
  };
  const stationsCall = (options: { created?: number; nonce?: string; idempotencyKey?: string } = {}) =>
    send(gw.url, 'GET', cities, signedHeaders('GET', cities, { key: gw.keys.hmac, bearer: gw.issuer.sign(), ...options }));
  const loginCall = (options: { created?: number; bearer?: string; nonce?: string; idempotencyKey?: string } = {}) =>
    send(gw.url, 'POST', login, signedHeaders('POST', login, { key: gw.keys.hmac, body: loginBody, ...options }), loginBody);
  const proxied = () => gw.identity.received.length + gw.risk.received.length;
  /** What Redis lost: every key of the environment, the mirror with them. */
  const loseData = () => testRedis.flush();
  /**
   * What the gateway reads of Redis's past: since when the client key's slot holds its nonces (`born`, ms),
   * and whether the revocation mirror is whole (`ready`: every bucket's, as identity's re-seed leaves them).
   */
  const mirror = async () => {
    const born = await testRedis.redis.hget(replayBornKey(gw.keys.hmac.keyId), 'born');
    const ready = await Promise.all(ALL_BUCKETS.map((b) => testRedis.redis.hget(ledgerKey(b), 'ready')));
    return { born: born ?? undefined, ready: ready.every((r) => r === '1') ? '1' : '0' };
  };
  /** Identity's re-seed: every bucket's mirror whole again. */
  const reseeded = () => freshEnvironment(testRedis.redis);
  /** A loss found at `born` (ms) in the client key's slot. */
  const lostAt = (born: number) => testRedis.redis.hset(replayBornKey(gw.keys.hmac.keyId), 'born', String(born));
  const rejections = async (reason: string) => {
    const text = await (await fetch(`${gw.managementUrl}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('gateway_rejected_requests_total{') && l.includes(`reason="${reason}"`));
    return line === undefined ? 0 : Number(line.split(' ').at(-1));
  };

  it('while the mirror is missing, answers a bearer request 503 in the error shape, proxies nothing and writes no nonce', async () => {
    const lostMs = Date.now();
    await loseData();
    const before = proxied();
    const restoringBefore = await rejections('revocations-restoring');
    const nonce = newNonce();
    const created = await afterLoss();
    const res = await stationsCall({ nonce, created });
    assert.equal(res.status, 503, res.body.toString());
    assert.equal(res.headers['retry-after'], '1', 'a retry cures it: the answer says when');
    assert.deepEqual(
      { status: res.json().status, error: res.json().error, message: res.json().message, path: res.json().path },
      { status: 503, error: 'Service Unavailable', message: REVOCATIONS_RESTORING_MESSAGE, path: cities },
    );
    // A station path: the gateway's own 503 carries `messages` too (CONTRACT.md part 7).
    assert.deepEqual(res.json(), {
      timestamp: res.json().timestamp,
      status: 503,
      error: 'Service Unavailable',
      message: REVOCATIONS_RESTORING_MESSAGE,
      messages: [REVOCATIONS_RESTORING_MESSAGE],
      path: cities,
    });
    assert.equal(proxied(), before, 'a bearer request went through while the revocations may be incomplete');
    assert.equal(await testRedis.redis.exists(nonceKey(gw.keys.hmac.keyId, nonce)), 0, 'the refused request spent its nonce');
    assert.equal(await rejections('revocations-restoring'), restoringBefore + 1);
    // The gateway noticed the loss and created the mirror, not ready, the key's ledger born within a second of the loss.
    const state = await mirror();
    assert.equal(state.ready, '0');
    assert.ok(Number(state.born) >= lostMs && Number(state.born) <= lostMs + 1500, JSON.stringify({ ...state, lostMs }));
    // The same request, once identity has re-seeded, goes through: the refusal did not spend its nonce.
    await reseeded();
    assert.equal((await stationsCall({ nonce, created })).status, 200);
  });

  it('while the mirror is not whole, proxies public requests without a token, and refuses them with one (503)', async () => {
    await loseData();
    const before = gw.identity.received.length;
    assert.equal((await loginCall({ created: await afterLoss() })).status, 200);
    assert.equal(gw.identity.received.length, before + 1);
    const withToken = await loginCall({ bearer: gw.issuer.sign(), created: await afterLoss() });
    assert.equal(withToken.status, 503);
    assert.equal(withToken.json().message, REVOCATIONS_RESTORING_MESSAGE);
    assert.equal(gw.identity.received.length, before + 1);
  });

  it('refuses a signature created before the loss with 401 Invalid request signature, even once the mirror is whole again', async () => {
    const signedBefore = nowS() - 2;
    await loseData();
    await stationsCall(); // notices the loss: the mirror is born now
    await reseeded();
    const before = proxied();
    const signatureRejections = await rejections('signature');
    for (const call of [() => stationsCall({ created: signedBefore }), () => loginCall({ created: signedBefore })]) {
      const res = await call();
      assert.equal(res.status, 401, res.body.toString());
      assert.equal(res.json().message, 'Invalid request signature');
    }
    assert.equal(proxied(), before);
    assert.equal(await rejections('signature'), signatureRejections + 2);
    // Two seconds before the loss's: refused; the second after it is accepted (once it is not ahead of the clock).
    await afterLoss();
    const bornMs = Number((await mirror()).born);
    assert.equal((await stationsCall({ created: Math.floor(bornMs / 1000) - 2 })).status, 401);
    assert.equal((await stationsCall({ created: Math.ceil(bornMs / 1000) })).status, 200);
    assert.equal((await loginCall({ created: await afterLoss() })).status, 200);
  });

  it('answers a signature created in the second the loss was found, or the one before, 503 with Retry-After: 1, never 401; it claims nothing, and the request signed again a second later passes', async () => {
    await loseData();
    // The loss within the current second, as the first script after it would have marked it: after the
    // gateway's last nonce write (an earlier mark would read as a loss found before that write, which the
    // next script would find again and move to its own now), and past the second's first millisecond.
    let bornMs = Date.now() + 1;
    if (bornMs % 1000 === 0) bornMs += 1;
    const second = Math.floor(bornMs / 1000);
    await lostAt(bornMs);
    await reseeded();
    const before = proxied();
    const asked = await rejections('signed-near-loss');
    const nonce = newNonce();
    const idempotencyKey = newIdempotencyKey();
    const res = await loginCall({ created: second, nonce, idempotencyKey });
    assert.equal(res.status, 503, res.body.toString());
    assert.equal(res.headers['retry-after'], '1');
    assert.deepEqual(
      { status: res.json().status, error: res.json().error, message: res.json().message, path: res.json().path },
      { status: 503, error: 'Service Unavailable', message: SIGNED_NEAR_LOSS_MESSAGE, path: login },
    );
    assert.equal(proxied(), before);
    assert.equal(await rejections('signed-near-loss'), asked + 1);
    assert.equal(await testRedis.redis.exists(nonceKey(gw.keys.hmac.keyId, nonce)), 0, 'its nonce was spent');
    assert.equal(await testRedis.redis.exists(idempotencyRedisKey(gw.keys.hmac.keyId, idempotencyKey)), 0, 'its idempotency key was claimed');
    // A bearer request of that second too: the 503 of the signature, not of the (whole) mirror.
    const bearing = await stationsCall({ created: second });
    assert.equal(bearing.status, 503);
    assert.equal(bearing.json().message, SIGNED_NEAR_LOSS_MESSAGE);
    // The second before: maybe signed after a loss found late (by a reconnect), asked to sign again too; the
    // one before that is over before the loss, 401. The next one: the same request signed again passes.
    const previous = await loginCall({ created: second - 1 });
    assert.equal(previous.status, 503, previous.body.toString());
    assert.equal(previous.json().message, SIGNED_NEAR_LOSS_MESSAGE);
    assert.equal(previous.headers['retry-after'], '1');
    assert.equal((await loginCall({ created: second - 2 })).status, 401);
    assert.equal(await rejections('signed-near-loss'), asked + 3);
    // Signed again a second later, once that second is not ahead of the clock (SIGNED_AHEAD_WINDOW_MS after the loss's dating).
    await sleep(bornMs + SIGNED_AHEAD_WINDOW_MS + 50 - Date.now());
    const again = await loginCall({ created: second + 1, idempotencyKey });
    assert.equal(again.status, 200, again.body.toString());
    assert.equal(proxied(), before + 1);
  });

  it('after a flush, each client key\'s first request finds its slot lost without closing the buckets again: once identity has re-seeded them, bearer requests of every key are served', async () => {
    // A gateway of its own: its stamps of both keys are this test's alone.
    const local = await startGateway({ redis: testRedis.redis });
    try {
      const call = (key: TestSigningKey, created?: number) => send(local.url, 'GET', cities, signedHeaders('GET', cities, { key, bearer: local.issuer.sign(), created }));
      // Both keys wrote nonces: this gateway's stamps in both slots count them.
      assert.equal((await call(local.keys.hmac)).status, 200);
      assert.equal((await call(local.keys.ed25519)).status, 200);
      await loseData();
      // Identity re-seeds the buckets (their own ledgers told it of the flush).
      await reseeded();
      // Each key's first request finds its stamp gone with the flush, and its ledger too or dated since (the key
      // watch): a loss of its slot, not a slot gone back in time, so the buckets, re-seeded already, stay open (a
      // slot gone back closed them all).
      assert.equal((await call(local.keys.hmac, await afterLoss())).status, 200);
      assert.equal((await mirror()).ready, '1', 'the first key\'s request closed the buckets again');
      assert.equal((await call(local.keys.ed25519, await afterLoss(local.keys.ed25519.keyId))).status, 200);
      assert.equal((await mirror()).ready, '1', 'the second key\'s request closed the buckets again');
    } finally {
      await local.close();
    }
  });

  it('dates a loss within a second of it for a key that sends nothing: a request signed after the loss and sent seconds later is served, not refused as signed before it', async () => {
    const lostMs = Date.now();
    await loseData();
    await reseeded();
    // Signed over a second after the loss, sent three seconds after it was signed: the key idle all along.
    const created = Math.ceil(lostMs / 1000) + 2;
    await sleep((created + 3) * 1000 - Date.now());
    const born = Number((await mirror()).born);
    assert.ok(born >= lostMs && born <= lostMs + 1500, `the loss was dated ${born - lostMs} ms after it happened`);
    const res = await loginCall({ created });
    assert.equal(res.status, 200, res.body.toString());
  });

  it('refuses the replay of a request signed ahead of the clock and sent before the loss: asked to sign again on every gateway until its nonce is written again, then 409; a request signed after the loss with an earlier created passes', async () => {
    // The outside attacks: a `created` ahead of the gateway's clock (CONTRACT.md part 2 allows SIGNATURE_MAX_SKEW_S)
    // is not "created before the loss", so the ledger's `born` could not tell its replay after a FLUSHALL; and
    // another gateway than the one that admitted it could not, until that one wrote its nonce again.
    const other = await startGateway({ redis: testRedis.redis, keepMirror: true });
    try {
      const created = nowS() + 5;
      const first = { key: gw.keys.hmac, body: loginBody, created, nonce: newNonce() };
      const second = { key: gw.keys.hmac, body: loginBody, created, nonce: newNonce() };
      const [firstHeaders, secondHeaders] = [signedHeaders('POST', login, first), signedHeaders('POST', login, second)];
      assert.equal((await send(gw.url, 'POST', login, firstHeaders, loginBody)).status, 200);
      assert.equal((await send(gw.url, 'POST', login, secondHeaders, loginBody)).status, 200);
      await loseData();
      await reseeded();
      const before = proxied();
      // At once, on either gateway: signed ahead of the clock within SIGNED_AHEAD_WINDOW_MS of the loss, asked to sign again; nothing claimed.
      for (const url of [other.url, gw.url]) {
        const early = await send(url, 'POST', login, secondHeaders, loginBody);
        assert.equal(early.status, 503, early.body.toString());
        assert.equal(early.json().message, SIGNED_NEAR_LOSS_MESSAGE);
      }
      assert.equal(await testRedis.redis.exists(idempotencyRedisKey(gw.keys.hmac.keyId, secondHeaders['x-idempotency-key'] as string)), 0);
      // By then the gateway that admitted them wrote both nonces again, for as long as Redis keeps a nonce: the other gateway refuses the replay.
      await afterLoss();
      const ttl = await testRedis.redis.pttl(nonceKey(gw.keys.hmac.keyId, second.nonce));
      assert.ok(ttl > 500_000 && ttl <= 602_000, `the nonce written again is kept ${ttl} ms`);
      const elsewhere = await send(other.url, 'POST', login, secondHeaders, loginBody);
      assert.equal(elsewhere.status, 409, elsewhere.body.toString());
      // And the gateway that admitted one refuses its replay by its own memory, whatever Redis holds; the idempotency key the replay took is given back.
      await testRedis.redis.del(nonceKey(gw.keys.hmac.keyId, first.nonce));
      const replay = await send(gw.url, 'POST', login, firstHeaders, loginBody);
      assert.equal(replay.status, 409, replay.body.toString());
      assert.equal(replay.json().message, 'Replay attack detected (nonce reused)');
      assert.equal(await testRedis.redis.exists(idempotencyRedisKey(gw.keys.hmac.keyId, firstHeaders['x-idempotency-key'] as string)), 0);
      assert.equal(proxied() + other.identity.received.length, before);
      // No client waits for the clock that ran ahead: a request signed after the loss, created before those, is served.
      const fresh = await loginCall({ created: nowS() });
      assert.equal(fresh.status, 200, fresh.body.toString());
    } finally {
      await other.close();
    }
  });

  it('writes the nonces signed ahead again within a tenth of a second of a loss: a request signed one second ahead, replayed to another gateway the moment the clock reaches its created, is refused (409)', async () => {
    // The outside attack on a window that ended when the clock reached `created`: a replay sent every 20 ms won
    // 61-91 ms after a flush made at .900 of the second before, while the key watch's next second was to come.
    const other = await startGateway({ redis: testRedis.redis, keepMirror: true });
    try {
      await sleep(1000 - (Date.now() % 1000) + 50);
      const second = nowS();
      const headers = signedHeaders('POST', login, { key: gw.keys.hmac, body: loginBody, created: second + 1, nonce: newNonce() });
      assert.equal((await send(gw.url, 'POST', login, headers, loginBody)).status, 200);
      await sleep(second * 1000 + 700 - Date.now());
      await loseData();
      await reseeded();
      // Another request of the key dates the loss at once (signed in its second: asked to sign again).
      const dating = await send(other.url, 'POST', login, signedHeaders('POST', login, { key: gw.keys.hmac, body: loginBody, created: nowS() }), loginBody);
      assert.equal(dating.status, 503, dating.body.toString());
      await sleep((second + 1) * 1000 + 30 - Date.now());
      const replay = await send(other.url, 'POST', login, headers, loginBody);
      assert.equal(replay.status, 409, replay.body.toString());
      assert.equal(other.identity.received.length, 0);
    } finally {
      await other.close();
    }
  });

  it('refuses, on another gateway, the replay of a request signed ahead whose gateway stopped before the loss and never wrote its nonce again: it was told of the nonce when it was admitted (409)', async () => {
    // The outside attacks' residuals: the gateway that admitted it stalled or restarted since, and nothing else knew the nonce.
    const admitting = await startGateway({ redis: testRedis.redis, keepMirror: true });
    const other = await startGateway({ redis: testRedis.redis, keepMirror: true });
    let stopped = false;
    try {
      const headers = signedHeaders('POST', login, { key: gw.keys.hmac, body: loginBody, created: nowS() + 10, nonce: newNonce() });
      const nonce = /nonce="([^"]+)"/.exec(String(headers['signature-input']))?.[1] ?? '';
      // The gateways subscribe to the channel on a connection of their own, made as they start.
      await sleep(500);
      assert.equal((await send(admitting.url, 'POST', login, headers, loginBody)).status, 200);
      await admitting.close();
      stopped = true;
      // Told, the other gateway watches the key every 0.1 s: its first look is no loss, and says none.
      const lossLines = () => other.logs.lines().filter((line) => String(line.msg).includes('lost its data')).length;
      await sleep(300);
      assert.equal(lossLines(), 0);
      await loseData();
      await reseeded();
      await afterLoss();
      const replay = await send(other.url, 'POST', login, headers, loginBody);
      assert.equal(replay.status, 409, replay.body.toString());
      assert.equal(replay.json().message, 'Replay attack detected (nonce reused)');
      assert.equal(other.identity.received.length, 0);
      // Written again by the gateways told of it, for as long as Redis keeps a nonce.
      const ttl = await testRedis.redis.pttl(nonceKey(gw.keys.hmac.keyId, nonce));
      assert.ok(ttl > 500_000 && ttl <= 602_000, `the nonce written again is kept ${ttl} ms`);
      assert.equal(lossLines(), 1);
    } finally {
      if (!stopped) await admitting.close();
      await other.close();
    }
  });

  it('after a loss, a gateway whose memory of a key\'s nonces signed ahead was full writes the newest it forgot into the ledger: a signature created at or below it is asked to sign again, one above it is served', async () => {
    const { redis } = testRedis;
    const keyId = 'ahead-full';
    const store = createAdmissionStore(redis, {
      nonceTtlS: 602,
      safeTtlS: 602,
      unsafeTtlS: 602,
      revocations: createRevocationReader(redis, { logger: silent }),
      keyIds: () => [keyId],
      maxSignedAheadPerKey: 2,
    });
    try {
      await store.dateKeys();
      await redis.hset(replayBornKey(keyId), 'born', String(Date.now() - 10_000));
      const admit = (nonce: string, created: number) =>
        store.admit({ keyId, nonce, idempotencyKey: newIdempotencyKey(), method: 'POST', token: undefined, bearing: false, created, owner: 'test', rate: undefined });
      const ahead = nowS() + 30;
      for (const [nonce, created] of [['nonce-forgotten-1', ahead - 20], ['nonce-kept-02', ahead - 10], ['nonce-kept-03', ahead]] as const) {
        assert.equal((await admit(nonce, created)).outcome, 'claimed');
      }
      await loseData();
      await store.dateKeys();
      assert.equal(await redis.hget(replayBornKey(keyId), 'ahead'), String(ahead - 20));
      // Past the window of the loss: the forgotten nonce's replay is asked to sign again by the floor, the kept ones' are replays.
      await sleep(SIGNED_AHEAD_WINDOW_MS + 50);
      assert.equal((await admit('nonce-forgotten-1', ahead - 20)).outcome, 'signed-near-loss');
      assert.equal((await admit('nonce-kept-02', ahead - 10)).outcome, 'nonce-reused');
      // The cost, for this key only: a signature of a clock behind the one that ran ahead is asked to sign again until the floor is past.
      const early = await admit('nonce-fresh-04', nowS());
      assert.equal(early.outcome, 'signed-near-loss');
      const floorPastMs = (ahead - 20 + 1) * 1000 - Date.now();
      assert.ok(Math.abs((early.signAgainMs ?? 0) - floorPastMs) < 1000, `asked to sign again in ${early.signAgainMs} ms, the floor past in ${floorPastMs}`);
      assert.equal((await admit('nonce-fresh-05', ahead - 19)).outcome, 'claimed');
    } finally {
      await store.stop();
    }
  });

  it('a request signed before the loss is refused while the mirror is still missing (401 before 503)', async () => {
    const signedBefore = nowS() - 2;
    await loseData();
    await lostAt(Date.now());
    const res = await stationsCall({ created: signedBefore });
    assert.equal(res.status, 401);
    assert.equal(res.json().message, 'Invalid request signature');
  });

  it('keeps the birth time a replica found first: a second gateway noticing later does not move it', async () => {
    await loseData();
    await sleep(5);
    // Another replica found the loss, after this gateway's last write.
    const first = Date.now();
    await lostAt(first);
    await stationsCall({ created: await afterLoss() });
    assert.deepEqual(await mirror(), { born: String(first), ready: '0' });
  });

  it('after a reconnect to the same server (a cut connection, CONTRACT.md part 14 amended), closes nothing: bearer requests are served, the birth stays', async () => {
    assert.deepEqual(await mirror(), { born: '0', ready: '1' });
    assert.equal((await stationsCall()).status, 200);
    const reconnected = nextReady(testRedis.redis);
    testRedis.redis.disconnect(true);
    await reconnected;
    // The gateway asks the server who it is (INFO) once connected again (on a cluster, each master's
    // connection is made again by its first command): bearer requests sent at once, of tokens of many buckets
    // (every master), wait for it and are served. With a refusal's message: which 503 it was.
    const answers = await Promise.all(Array.from({ length: 24 }, () => stationsCall()));
    assert.deepEqual(
      answers.map((answer) => (answer.status === 200 ? 200 : `${answer.status} ${answer.body.toString('utf8')}`)),
      answers.map(() => 200),
    );
    await sleep(300);
    assert.deepEqual(await mirror(), { born: '0', ready: '1' }, 'a bucket was closed for a mere reconnect');
    const answer = await stationsCall();
    assert.equal(answer.status, 200, answer.body.toString('utf8'));
    assert.equal((await loginCall()).status, 200);
  });

  /** The INFO that identifies `redis`'s server read `delayMs` after its answer; the client's own ready check (INFO with a callback) is not slowed. */
  function slowInfo(redis: Redis, delayMs: number): void {
    const info = redis.info.bind(redis) as (...args: unknown[]) => Promise<string>;
    Object.assign(redis, {
      info: async (...args: unknown[]) => {
        const found = await info(...args);
        if (typeof args.at(-1) !== 'function') await sleep(delayMs);
        return found;
      },
    });
  }

  /**
   * A gateway whose Redis, a private server, is reached through a TCP proxy the test can hold or cut; `stored`
   * says whether the server holds one of the gateway's keys, read beside the proxy; `answerHeld` sends a request
   * with the server's answers held, and gives its answer, to come, once Redis has run its admission (`key`).
   */
  async function behindProxy(name: string, run: (setup: {
    proxy: TcpProxy;
    own: Redis;
    local: TestGateway;
    stored: (key: string) => Promise<boolean>;
    answerHeld: (send: () => Promise<Answer>, key: string) => Promise<{ answer: Promise<Answer> }>;
  }) => Promise<void>): Promise<void> {
    const server = await startPrivateRedis();
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: server.port });
    // A command's timeout and a request deadline long enough for the cut, the reconnect and the resend on a busy
    // machine (the case is an answer lost, not one late).
    const own = createRedis({ url: `redis://127.0.0.1:${proxy.port}`, keyPrefix: `${name}:`, logger: silent, commandTimeoutMs: 5000 });
    assert.ok(await waitForRedis(own, 5000), 'the private Redis did not answer through the proxy');
    const local = await startGateway({ redis: own, env: { REQUEST_DEADLINE_MS: '10000' } });
    const raw = await createTestRedis(`${name}-raw`, server.url);
    const stored = async (key: string): Promise<boolean> => (await raw.redis.keys(`${name}:*${key}`)).length > 0;
    const answerHeld = async (sent: () => Promise<Answer>, key: string): Promise<{ answer: Promise<Answer> }> => {
      proxy.holdAnswers();
      const answer = sent();
      const deadline = Date.now() + 5000;
      while (!(await stored(key))) {
        assert.ok(Date.now() < deadline, 'the admission never reached Redis');
        await sleep(10);
      }
      // Wrapped: an async function returning the promise itself would wait for the answer.
      return { answer };
    };
    try {
      await run({ proxy, own, local, stored, answerHeld });
    } finally {
      await local.close();
      await raw.close();
      await closeRedis(own);
      await proxy.close();
      await server.stop();
    }
  }

  // The helpers' attack (blips under traffic): a connection cut after Redis ran a request's admission and before
  // its answer came back. ioredis sends the command again on the next connection; the script found the nonce it had
  // written itself and answered 409 "Replay attack detected" to a request never replayed, its idempotency key kept.
  it('an admission Redis ran whose answer was lost with its connection, sent again by the client, is answered as the first time: not a replay of itself, its revocation check trusted once the server is known the same', async () => {
    await behindProxy('gw-resent', async ({ proxy, own, local, answerHeld }) => {
      const bearer = local.issuer.sign();
      const get = (nonce: string, idempotencyKey: string) =>
        send(local.url, 'GET', cities, signedHeaders('GET', cities, { key: local.keys.hmac, bearer, nonce, idempotencyKey }));
      const post = (nonce: string, idempotencyKey: string) =>
        send(local.url, 'POST', login, signedHeaders('POST', login, { key: local.keys.hmac, body: loginBody, nonce, idempotencyKey }), loginBody);
      assert.equal((await get(newNonce(), newIdempotencyKey())).status, 200);
      // The server's INFO after the reconnect read 150 ms after its answer, so after the answer sent again (read
      // in one packet with it here, apart under traffic): the revocation check's verdict waits for it (a 503
      // "being restored" before it did).
      slowInfo(own, 150);
      // A bearer request (its revocation check in the same script) and one without a token.
      for (const [what, call] of [['a bearer GET', get], ['a POST without a token', post]] as const) {
        const nonce = newNonce();
        const idempotencyKey = newIdempotencyKey();
        const { answer } = await answerHeld(() => call(nonce, idempotencyKey), nonceKey(local.keys.hmac.keyId, nonce));
        // Run, its answer held: the connection drops, and the client connects again and sends it once more.
        const reconnected = nextReady(own);
        await proxy.kill();
        await proxy.restore();
        await reconnected;
        const res = await answer;
        assert.equal(res.status, 200, `${what}: ${res.body.toString('utf8')}`);
        // Its idempotency key is its own, and taken: the same key on another request is refused as reused.
        const again = await call(newNonce(), idempotencyKey);
        assert.equal(again.status, 409, `${what}, the key again: ${again.body.toString('utf8')}`);
        assert.match(again.json().message as string, /X-Idempotency-Key/);
      }
    });
  });

  it('a bearer request sent while its Redis server is being identified, INFO later than a command may take: 503 as when Redis cannot be reached, not "being restored"; its idempotency key given back', async () => {
    await behindProxy('gw-unknown', async ({ proxy, own, local }) => {
      const bearer = local.issuer.sign();
      const get = (idempotencyKey: string) => send(local.url, 'GET', cities, signedHeaders('GET', cities, { key: local.keys.hmac, bearer, idempotencyKey }));
      assert.equal((await get(newIdempotencyKey())).status, 200);
      slowInfo(own, 900);
      const reconnected = nextReady(own);
      await proxy.kill();
      await proxy.restore();
      await reconnected;
      const idempotencyKey = newIdempotencyKey();
      const started = Date.now();
      const refused = await get(idempotencyKey);
      assert.equal(refused.status, 503, refused.body.toString('utf8'));
      assert.equal(refused.json().message, 'Service temporarily unavailable');
      assert.equal(refused.headers['retry-after'], '1');
      // After the wait (a command's timeout, 0.5 s), not before, and not the whole INFO's delay.
      const waited = Date.now() - started;
      assert.ok(waited >= 400 && waited < 850, `refused after ${waited} ms`);
      // Once the server is known (the same one): served, with the same idempotency key.
      await sleep(600);
      const served = await get(idempotencyKey);
      assert.equal(served.status, 200, served.body.toString('utf8'));
    });
  });

  it('an idempotency key claimed by a request whose answer was lost, Redis unreachable then for its release too, is released once Redis answers again: the client\'s retry with it runs', async () => {
    await behindProxy('gw-unreleased', async ({ proxy, local, stored, answerHeld }) => {
      const post = (idempotencyKey: string) => send(local.url, 'POST', login, signedHeaders('POST', login, { key: local.keys.hmac, body: loginBody, idempotencyKey }), loginBody);
      assert.equal((await post(newIdempotencyKey())).status, 200);
      const idempotencyKey = newIdempotencyKey();
      const key = idempotencyRedisKey(local.keys.hmac.keyId, idempotencyKey);
      const { answer: first } = await answerHeld(() => post(idempotencyKey), key);
      // Claimed, its answer held; then Redis is out of reach: the admission fails (503), and so does the release.
      await proxy.kill();
      const res = await first;
      assert.equal(res.status, 503, res.body.toString('utf8'));
      assert.equal(local.identity.received.length, 1, 'the failed request was forwarded');
      assert.equal(await stored(key), true, 'the key was not left claimed: this case did not happen');
      // Redis answers again: the key is released within a second, and the client's retry (signed again, same key) runs.
      await proxy.restore();
      for (let i = 0; await stored(key); i += 1) {
        assert.ok(i < 300, 'the key was never released');
        await sleep(10);
      }
      const retry = await post(idempotencyKey);
      assert.equal(retry.status, 200, retry.body.toString('utf8'));
      assert.equal(local.identity.received.length, 2);
      // Told twice for the outage: when the first key was kept, and when all were released.
      const told = local.logs.lines().filter((l) => /idempotency keys/.test(String(l.msg)));
      assert.deepEqual(told.map((l) => [l.level, l.msg, l.released]), [
        ['warn', 'could not release the idempotency keys of failed requests; they are released once Redis answers', undefined],
        ['info', 'released the idempotency keys of the requests that failed while Redis was unreachable', 1],
      ]);
    });
  });

  it('after a restart of the server that kept its data (another run id: maybe a replica that lagged), holds bearer requests until the buckets are re-seeded; the birth stays', async () => {
    const server = await startPrivateRedis();
    const own = await createTestRedis('gw-redis-restart', server.url);
    const local = await startGateway({ redis: own.redis });
    try {
      const ownMirror = async () => (await Promise.all(ALL_BUCKETS.map((b) => own.redis.hget(ledgerKey(b), 'ready')))).every((r) => r === '1');
      const call = () => send(local.url, 'GET', cities, signedHeaders('GET', cities, { key: local.keys.hmac, bearer: local.issuer.sign() }));
      assert.equal((await call()).status, 200);
      const born = await own.redis.hget(replayBornKey(local.keys.hmac.keyId), 'born');
      const reconnected = nextReady(own.redis);
      await server.restart({ keepData: true });
      await reconnected;
      const deadline = Date.now() + 5000;
      while ((await ownMirror()) && Date.now() < deadline) await sleep(20);
      assert.equal(await ownMirror(), false, 'the buckets of the replaced server were not closed');
      assert.equal((await call()).status, 503);
      // No nonce of this gateway was lost: signatures keep working; only what needs the revocations waits.
      assert.equal((await send(local.url, 'POST', login, signedHeaders('POST', login, { key: local.keys.hmac, body: loginBody }), loginBody)).status, 200);
      assert.equal(await own.redis.hget(replayBornKey(local.keys.hmac.keyId), 'born'), born);
      await freshEnvironment(own.redis);
      assert.equal((await call()).status, 200);
    } finally {
      await local.close();
      await own.close();
      await server.stop();
    }
  });

  // The revocation check and the client key's script go out together (admission.ts): a refusal by the check
  // takes back what the script claimed for the request, and nothing that another request holds.
  it('a bearer request whose idempotency key another request holds, refused 503 while the mirror is re-seeded: its nonce is taken back, the other request\'s key is not', async () => {
    const idempotencyKey = newIdempotencyKey();
    assert.equal((await stationsCall({ idempotencyKey })).status, 200);
    const owner = await testRedis.redis.get(idempotencyRedisKey(gw.keys.hmac.keyId, idempotencyKey));
    assert.ok(owner !== null);
    await Promise.all(ALL_BUCKETS.map((b) => testRedis.redis.hset(ledgerKey(b), 'ready', '0')));
    const nonce = newNonce();
    const res = await stationsCall({ nonce, idempotencyKey });
    assert.equal(res.status, 503, res.body.toString());
    assert.equal(res.json().message, REVOCATIONS_RESTORING_MESSAGE);
    assert.equal(await testRedis.redis.exists(nonceKey(gw.keys.hmac.keyId, nonce)), 0, 'the refused request spent its nonce');
    assert.equal(await testRedis.redis.get(idempotencyRedisKey(gw.keys.hmac.keyId, idempotencyKey)), owner, 'the first request lost its key');
    // Once whole: the same nonce is fresh, the key still the first request's (409, not a second answer).
    await reseeded();
    const again = await stationsCall({ nonce, idempotencyKey });
    assert.equal(again.status, 409, again.body.toString());
    assert.equal(again.json().message, 'Duplicate request detected (X-Idempotency-Key)');
  });

  it('a replayed bearer request while the mirror is re-seeded: 503 first (CONTRACT.md order), and the nonce stays the first request\'s', async () => {
    const nonce = newNonce();
    const created = nowS();
    assert.equal((await stationsCall({ nonce, created })).status, 200);
    const owner = await testRedis.redis.get(nonceKey(gw.keys.hmac.keyId, nonce));
    await Promise.all(ALL_BUCKETS.map((b) => testRedis.redis.hset(ledgerKey(b), 'ready', '0')));
    const replay = await stationsCall({ nonce, created });
    assert.equal(replay.status, 503, replay.body.toString());
    assert.equal(replay.json().message, REVOCATIONS_RESTORING_MESSAGE);
    assert.equal(await testRedis.redis.get(nonceKey(gw.keys.hmac.keyId, nonce)), owner);
    await reseeded();
    assert.equal((await stationsCall({ nonce, created })).status, 409);
  });

  it('a bearer request whose revocation check fails in Redis while its claim succeeded: 503, its nonce and idempotency key taken back, and it passes once Redis answers the check', async () => {
    const before = proxied();
    const unavailable = await rejections('redis-unavailable');
    // Every bucket's mirror of the wrong type: the check's script fails (WRONGTYPE), the client key's runs.
    await Promise.all(ALL_BUCKETS.map(async (b) => {
      await testRedis.redis.del(ledgerKey(b));
      await testRedis.redis.set(ledgerKey(b), 'not a hash');
    }));
    const nonce = newNonce();
    const idempotencyKey = newIdempotencyKey();
    const created = nowS();
    const res = await stationsCall({ nonce, idempotencyKey, created });
    assert.equal(res.status, 503, res.body.toString());
    assert.equal(res.headers['retry-after'], '1');
    assert.equal(proxied(), before);
    assert.equal(await rejections('redis-unavailable'), unavailable + 1);
    assert.equal(await testRedis.redis.exists(nonceKey(gw.keys.hmac.keyId, nonce)), 0, 'the refused request spent its nonce');
    assert.equal(await testRedis.redis.exists(idempotencyRedisKey(gw.keys.hmac.keyId, idempotencyKey)), 0, 'the refused request kept its key');
    await Promise.all(ALL_BUCKETS.map((b) => testRedis.redis.del(ledgerKey(b))));
    await reseeded();
    const again = await stationsCall({ nonce, idempotencyKey, created });
    assert.equal(again.status, 200, again.body.toString());
    assert.equal(proxied(), before + 1);
  });

  describe('when Redis went back in time (a replica that lagged was promoted: the mirror intact, later nonces gone)', () => {
    /**
     * A request answered after the snapshot, so that its nonce is lost with the rollback. Signed two seconds
     * before (within the skew): one of the loss's own second or the one before would be answered 503, not 401
     * (a test above).
     */
    async function answeredThenRolledBack(): Promise<Record<string, string>> {
      const rollBack = await testRedis.snapshot();
      const headers = signedHeaders('POST', login, { key: gw.keys.hmac, body: loginBody, created: nowS() - 2 });
      assert.equal((await send(gw.url, 'POST', login, headers, loginBody)).status, 200);
      await rollBack();
      assert.equal((await mirror()).ready, '1', 'the rollback lost the mirror itself');
      return headers;
    }

    it('a bearer request whose own claim finds it, signed after it (ahead of the clock), is asked to sign again (503) and claims nothing; the buckets close for the re-seed', async () => {
      await answeredThenRolledBack();
      const before = proxied();
      const nonce = newNonce();
      const idempotencyKey = newIdempotencyKey();
      // Signed after the loss as far as `created` tells (a clock ahead, or a request that was on its way): of a
      // loss this very call found, so asked to sign again (ahead of the clock), and it closes the buckets.
      const res = await stationsCall({ nonce, idempotencyKey, created: nowS() + 2 });
      assert.equal(res.status, 503, res.body.toString());
      assert.equal(res.json().message, SIGNED_NEAR_LOSS_MESSAGE);
      assert.equal(proxied(), before);
      assert.equal((await mirror()).ready, '0');
      assert.equal(await testRedis.redis.exists(nonceKey(gw.keys.hmac.keyId, nonce)), 0, 'its nonce was kept');
      assert.equal(await testRedis.redis.exists(idempotencyRedisKey(gw.keys.hmac.keyId, idempotencyKey)), 0, 'its idempotency key was kept');
      // A request without a token is not held: nothing of it depends on the revocations.
      assert.equal((await loginCall({ created: await afterLoss() })).status, 200);
    });

    it('the next claim finds it by the gateway\'s write stamp: the replay is refused (401), bearer requests wait for the re-seed (503)', async () => {
      const headers = await answeredThenRolledBack();
      const found = Date.now();
      const replay = await send(gw.url, 'POST', login, headers, loginBody);
      assert.equal(replay.status, 401, replay.body.toString());
      assert.equal(replay.json().message, 'Invalid request signature');
      const state = await mirror();
      assert.equal(state.ready, '0');
      assert.ok(Number(state.born) >= found - 50, JSON.stringify(state));
      // The client key's hash says since when, nothing else: readiness is the revocation mirrors' word.
      assert.deepEqual(Object.keys(await testRedis.redis.hgetall(replayBornKey(gw.keys.hmac.keyId))), ['born']);
      assert.equal((await stationsCall({ created: await afterLoss() })).status, 503);
    });

    it('a reconnect finds it before any request (a failover always reconnects), so another replica cannot be replayed to', async () => {
      const headers = await answeredThenRolledBack();
      // Dropped and connected again, as by a failover; the gateway checks its stamp on `ready`.
      const reconnected = nextReady(testRedis.redis);
      testRedis.redis.disconnect(true);
      await reconnected;
      const deadline = Date.now() + 5000;
      while ((await mirror()).ready !== '0' && Date.now() < deadline) await sleep(20);
      assert.equal((await mirror()).ready, '0', 'the reconnect did not find the loss');
      // A second gateway, which wrote nothing before the loss, is handed the replay: refused.
      const other = await startGateway({ redis: testRedis.redis, keepMirror: true });
      try {
        const replay = await send(other.url, 'POST', login, headers, loginBody);
        assert.equal(replay.status, 401, replay.body.toString());
      } finally {
        await other.close();
      }
    });
  });
});
