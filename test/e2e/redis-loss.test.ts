import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { type Client, createClient } from '@platform/client';
import { ALL_BUCKETS, ledgerKey } from '@platform/auth/testing';
import { REVOCATIONS_RESTORING_MESSAGE } from '@platform/auth';
import { type Redis, closeRedis, createLogger, createRedis, waitForRedis } from '@platform/service-kit';
import { createDatabase } from '@platform/service-kit/database';
import { flushKeys, snapshotKeys } from '@platform/service-kit/testing';
import { type Answer, send } from '../../gateway/test/support/gateway-harness.ts';
import { type TestSigningKey, signedHeaders } from '../../gateway/test/support/signing-client.ts';
import { type CaptureServer, startCaptureServer } from '../../services/identity/test/support/capture-server.ts';
import { type PrivateRedis, startPrivateRedis } from '@platform/stack';
import { replayBornKey } from '../../gateway/src/admission/admission.ts';
import { SIGNED_NEAR_LOSS_MESSAGE } from '../../gateway/src/admission/admit.step.ts';
import { type Stack, startStack } from './support/stack.ts';

/** CONTRACT.md part 13: detection and recovery within 5 s of Redis answering again. */
const RECOVERY_MS = 5000;
const LOCAL_KEY: TestSigningKey = { keyId: 'local-dev', alg: 'hmac-sha256', secret: 'local-dev-secret' };

/** A token that must never be accepted again, and what took it away. */
interface RevokedToken {
  why: string;
  token: string;
  /** A path its owner could read while the token was live. */
  target: string;
}

/** Tokens of users that must work again after the loss. */
interface LiveToken {
  token: string;
  target: string;
}

// The issue as an operator met it: revocations made before Redis lost its data (a flush of the
// environment's keys; a restart of a Redis that keeps nothing on disk) must survive it, live tokens must
// work again within 5 s, and no request signed before the loss may be replayed. Three real processes on a
// private redis-server the test may flush, kill and restart.
describe('end to end: Redis loses its data (CONTRACT.md part 13)', function () {
  this.timeout(120_000);
  let redis: PrivateRedis;
  let stack: Stack;
  let mail: CaptureServer;
  let sms: CaptureServer;
  /** On the private server without a prefix: what the test flushes. */
  let raw: Redis;

  before(async () => {
    redis = await startPrivateRedis();
    raw = createRedis({ url: redis.url, keyPrefix: '', logger: createLogger({ service: 'test', level: 'silent' }) });
    assert.ok(await waitForRedis(raw, 5000));
    mail = await startCaptureServer();
    sms = await startCaptureServer();
    stack = await startStack({ mailUrl: mail.url, smsUrl: sms.url }, {}, { redisUrl: redis.url });
  });
  after(async () => {
    await stack?.stop();
    if (raw !== undefined) await closeRedis(raw);
    await redis?.stop();
    await mail?.close();
    await sms?.close();
  });

  const client = (): Client => createClient({ env: 'local', baseUrl: stack.gatewayUrl, keyId: LOCAL_KEY.keyId, key: { alg: LOCAL_KEY.alg, secret: LOCAL_KEY.secret } });
  const nowS = () => Math.floor(Date.now() / 1000);
  /** One signed GET with `token`, created at `created`: raw, so no SDK refresh or retry hides the gateway's answer. */
  const get = (target: string, token: string, created = nowS()): Promise<Answer> =>
    send(stack.gatewayUrl, 'GET', target, signedHeaders('GET', target, { key: LOCAL_KEY, bearer: token, created }));
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** When the Redis slot of the client key's nonces last lost its data, as the gateway marked it (ms). */
  const born = async () => Number(await raw.hget(`${stack.redis.prefix}${replayBornKey(LOCAL_KEY.keyId)}`, 'born'));

  /** Every key of the run's environment gone, as after a flush or a failover to an empty replica. */
  const flushEnvironment = () => flushKeys(raw, stack.redis.prefix);

  async function newUser(admin: Client, roles: Array<'ADMIN' | 'STANDARD_USER'> = ['STANDARD_USER']) {
    const password = 'a-good-password-1';
    const user = await admin.users.create({
      username: `user-${randomUUID()}@example.com`,
      password,
      firstName: 'Ayşe',
      lastName: 'Yılmaz',
      locale: 'tr_TR',
      timezone: 'Europe/Istanbul',
      roles,
      status: 'ACTIVE',
    });
    const session = async () => {
      const signedIn = client();
      const tokens = await signedIn.auth.login({ username: user.username, password });
      return { client: signedIn, token: tokens.accessToken };
    };
    return { user, session };
  }

  /**
   * Logs a user out, ends one of another user's two sessions and demotes an ADMIN (whose sessions end
   * with it); the tokens each took away, and live tokens of the same users and one more.
   */
  async function revokeSomeTokens(): Promise<{ revoked: RevokedToken[]; live: LiveToken[] }> {
    const admin = client();
    await admin.auth.login(stack.admin);

    const leaver = await newUser(admin);
    const leaving = await leaver.session();
    await leaving.client.auth.logout();

    const twice = await newUser(admin);
    const kept = await twice.session();
    const ended = await twice.session();
    const other = (await kept.client.sessions.list()).items.find((s) => !s.current);
    assert.ok(other !== undefined, 'the second session is not listed');
    await kept.client.sessions.revoke(other.sessionId);

    const demoted = await newUser(admin, ['ADMIN']);
    const asAdmin = await demoted.session();
    assert.equal((await get('/v1/users', asAdmin.token)).status, 200, 'the ADMIN could not list users before the demotion');
    await admin.users.update({ userId: demoted.user.userId, roles: ['STANDARD_USER'] });

    const bystander = await newUser(admin);
    const live = await bystander.session();

    // Identity reads sessions from Postgres too; risk knows a revocation only through Redis: both asked.
    const stations = '/v1/weather-stations/get-cities';
    const revoked: RevokedToken[] = [
      { why: 'logged out', token: leaving.token, target: `/v1/users/${leaver.user.userId}` },
      { why: 'logged out (stations)', token: leaving.token, target: stations },
      { why: 'session revoked', token: ended.token, target: `/v1/users/${twice.user.userId}` },
      { why: 'session revoked (stations)', token: ended.token, target: stations },
      { why: 'demoted ADMIN (users list)', token: asAdmin.token, target: '/v1/users' },
      { why: 'demoted ADMIN (stations)', token: asAdmin.token, target: stations },
    ];
    const liveTokens: LiveToken[] = [
      { token: kept.token, target: `/v1/users/${twice.user.userId}` },
      { token: live.token, target: `/v1/users/${bystander.user.userId}` },
      { token: live.token, target: stations },
    ];
    await assertRefused(revoked);
    for (const { token, target } of liveTokens) assert.equal((await get(target, token)).status, 200, `${target} before the loss`);
    return { revoked, live: liveTokens };
  }

  async function assertRefused(revoked: readonly RevokedToken[]): Promise<void> {
    for (const { why, token, target } of revoked) {
      const res = await get(target, token);
      assert.equal(res.status, 401, `${why}: ${res.status} ${res.body.toString()}`);
    }
  }

  /** A 503 says when to retry (CONTRACT.md part 13): every one a retry can cure, and these all can. */
  const assertRetryAfter = (res: Answer, what: string) => assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/, `${what}: a 503 without Retry-After`);

  /**
   * Until every live token answers 200 (at most RECOVERY_MS after `since`), keeps asking with the revoked
   * ones too: each answer must be a refusal (503 while the revocations are restored, 401 after), never a
   * 200. A live token signed afresh is never refused with 401, not even in the second of the loss (503 with
   * Retry-After then). Returns how long recovery took and the statuses seen.
   */
  async function recoverWithoutAcceptingRevoked(since: number, revoked: readonly RevokedToken[], live: readonly LiveToken[]) {
    const seen = new Set<number>();
    for (;;) {
      for (const { why, token, target } of revoked) {
        const res = await get(target, token);
        seen.add(res.status);
        assert.ok(res.status === 401 || res.status === 503, `${why}: accepted after the loss (${res.status} ${res.body.toString()})`);
      }
      const created = nowS();
      const answers = await Promise.all(live.map(({ token, target }) => get(target, token, created)));
      for (const res of answers) seen.add(res.status);
      if (answers.every((res) => res.status === 200)) return { tookMs: Date.now() - since, seen };
      for (const res of answers) {
        assert.ok(res.status === 503 || res.status === 200, `a live token signed afresh got ${res.status}: ${res.body.toString()}`);
        if (res.status === 503) assertRetryAfter(res, 'a live token');
      }
      if (Date.now() - since > RECOVERY_MS) assert.fail(`live tokens still refused ${RECOVERY_MS} ms after Redis answered again: ${[...seen].join(', ')}`);
      await sleep(50);
    }
  }

  /** A request signed and answered now, kept to be replayed after the loss (which may come within the same second). */
  async function signedBeforeLoss(token: string, target: string): Promise<{ headers: Record<string, string>; unsent: Record<string, string> }> {
    const headers = signedHeaders('GET', target, { key: LOCAL_KEY, bearer: token });
    const unsent = signedHeaders('GET', target, { key: LOCAL_KEY, bearer: token });
    assert.equal((await send(stack.gatewayUrl, 'GET', target, headers)).status, 200);
    assert.equal((await send(stack.gatewayUrl, 'GET', target, headers)).status, 409, 'a replay before the loss');
    return { headers, unsent };
  }

  /**
   * Replays of a request signed before the loss are refused: 401 when its second was over a whole second
   * before the loss's, and 503 with Retry-After when it was signed in the loss's own second or the one before
   * (which cannot be told from a signature after a loss found late), a refusal that lasts as long as the
   * signature (it is never admitted, however often sent again).
   */
  async function assertNotReplayable(target: string, signed: { headers: Record<string, string>; unsent: Record<string, string> }): Promise<void> {
    const lossSecond = Math.floor((await born()) / 1000);
    for (const headers of [signed.headers, signed.unsent]) {
      const created = Number(/;created=(\d+)/.exec(headers['signature-input'] ?? '')?.[1]);
      for (let attempt = 0; attempt < 2; attempt += 1) {
        const res = await send(stack.gatewayUrl, 'GET', target, headers);
        if (created < lossSecond - 1) {
          assert.equal(res.status, 401, res.body.toString());
          assert.equal(res.json().message, 'Invalid request signature');
        } else {
          assert.equal(res.status, 503, res.body.toString());
          assert.equal(res.json().message, SIGNED_NEAR_LOSS_MESSAGE);
          assertRetryAfter(res, 'a replay of the loss\'s second');
        }
      }
    }
  }

  it('after a flush of the environment’s keys: revoked tokens stay refused, live ones work within 5 s, nothing signed before is replayed', async () => {
    const { revoked, live } = await revokeSomeTokens();
    const [probe] = live;
    const signed = await signedBeforeLoss(probe!.token, probe!.target);

    const deleted = await flushEnvironment();
    assert.ok(deleted > 0, 'nothing of the environment was in Redis');
    const { tookMs, seen } = await recoverWithoutAcceptingRevoked(Date.now(), revoked, live);
    assert.ok(tookMs <= RECOVERY_MS, `recovered after ${tookMs} ms`);

    await assertRefused(revoked);
    await assertNotReplayable(probe!.target, signed);
    // The revocations are back in Redis, not only refused by chance: identity's re-seed wrote them.
    assert.ok((await raw.keys(`${stack.redis.prefix}*`)).length > 0);
    assert.ok(seen.has(200));
  });

  it('after a restart of a Redis that keeps nothing: the same, measured from when Redis answers again', async () => {
    const { revoked, live } = await revokeSomeTokens();
    const [probe] = live;
    const signed = await signedBeforeLoss(probe!.token, probe!.target);

    await redis.kill();
    const down = await get(probe!.target, probe!.token);
    assert.equal(down.status, 503, 'answered without Redis');
    await redis.restart();
    const { tookMs } = await recoverWithoutAcceptingRevoked(Date.now(), revoked, live);
    assert.ok(tookMs <= RECOVERY_MS, `recovered after ${tookMs} ms`);

    await assertRefused(revoked);
    await assertNotReplayable(probe!.target, signed);
    // Identity reports ready again once the mirror is whole (CONTRACT.md part 13: the readiness signal).
    assert.equal((await fetch(`${stack.identityUrl}/health/ready`)).status, 200);
  });

  it('a Redis restarted empty under signed traffic (a request every 100 ms): 503 with Retry-After while it is away and restored, never 401, then 200', async () => {
    const { live } = await revokeSomeTokens();
    const [probe] = live;
    const statuses: number[] = [];
    let stop = false;
    const traffic = (async () => {
      while (!stop) {
        const res = await get(probe!.target, probe!.token);
        statuses.push(res.status);
        assert.ok(res.status === 200 || res.status === 503, `an honest request got ${res.status}: ${res.body.toString()}`);
        if (res.status === 503) assertRetryAfter(res, 'signed traffic');
        await sleep(100);
      }
    })();
    try {
      await sleep(300);
      await redis.kill();
      await sleep(1500);
      await redis.restart();
      const back = Date.now();
      // Served again, and the loss's own second behind us: five answers in a row are 200.
      while (!(statuses.length >= 5 && statuses.slice(-5).every((s) => s === 200))) {
        assert.ok(Date.now() - back < RECOVERY_MS + 2000, `still not served: ${statuses.join(' ')}`);
        await sleep(100);
      }
    } finally {
      stop = true;
      await traffic;
    }
    assert.ok(statuses.includes(503), `no 503 while Redis was away: ${statuses.join(' ')}`);
    assert.ok(!statuses.includes(401), statuses.join(' '));
  });

  it('the SDK rides out the second of a loss: its request signed then is answered 503 Retry-After: 1, signed again and served', async () => {
    const seen: Array<{ status: number; retryAfter: string | null; signature: string | null }> = [];
    const recording = createClient({
      env: 'local',
      baseUrl: stack.gatewayUrl,
      keyId: LOCAL_KEY.keyId,
      key: { alg: LOCAL_KEY.alg, secret: LOCAL_KEY.secret },
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        seen.push({ status: res.status, retryAfter: res.headers.get('retry-after'), signature: new Headers(init?.headers).get('signature') });
        return res;
      },
    });
    // Early in a second, so that the loss (marked by the first script that meets it) and the signature
    // share it: that second cannot be told apart from the time before the loss.
    while (Date.now() % 1000 < 50 || Date.now() % 1000 > 200) await sleep(5);
    await flushEnvironment();
    const tokens = await recording.auth.login(stack.admin);
    assert.equal(tokens.username, stack.admin.username);
    assert.deepEqual(seen.map((s) => [s.status, s.retryAfter]), [[503, '1'], [200, null]], JSON.stringify(seen));
    assert.notEqual(seen[1]!.signature, seen[0]!.signature, 'signed again');
  });

  it('after a failover to a replica that lagged (the mirror intact, the latest writes gone, every connection dropped): the same', async () => {
    // What the replica holds: the environment as it was before the revocations and the signed request.
    const rollBack = await snapshotKeys(raw, stack.redis.prefix);
    const bornBefore = await born();
    const { revoked, live } = await revokeSomeTokens();
    const [probe] = live;
    const signed = await signedBeforeLoss(probe!.token, probe!.target);

    await rollBack();
    const mirrors = await Promise.all(ALL_BUCKETS.map((b) => raw.hget(`${stack.redis.prefix}${ledgerKey(b)}`, 'ready')));
    assert.ok(mirrors.every((ready) => ready === '1'), 'the replica lost the mirrors themselves');
    // The promotion: another server (another run id) takes over with that data, and every client of the
    // old primary connects to it.
    await redis.restart({ keepData: true });
    const { tookMs, seen } = await recoverWithoutAcceptingRevoked(Date.now(), revoked, live);
    assert.ok(tookMs <= RECOVERY_MS, `recovered after ${tookMs} ms`);
    assert.ok(seen.has(503), 'bearer requests were not held while the revocations were re-seeded');

    await assertRefused(revoked);
    await assertNotReplayable(probe!.target, signed);
    assert.ok((await born()) > bornBefore, 'the loss was not marked');
  });

  it('after a failover that identity cannot tell from its own count (the revocations gone, its stamps kept): every process holds bearer requests until identity re-seeds', async () => {
    const { revoked, live } = await revokeSomeTokens();
    // What a replica that lagged behind identity's last writes holds: the revocations gone, identity's
    // count of them as it was (a stamp gone back would tell identity itself).
    const revocationKeys = [
      ...(await raw.keys(`${stack.redis.prefix}auth:{rv:*}:session:*`)),
      ...(await raw.keys(`${stack.redis.prefix}auth:{rv:*}:token:*`)),
    ];
    assert.ok(revocationKeys.length > 0);
    await raw.unlink(...revocationKeys);
    // Identity's re-seed reads the sessions it restores: while that table is locked it waits, so the hold
    // (every process answering bearer requests 503 until the re-seed) is there to be seen, however fast the
    // re-seed would be. Without the lock it could be over before the first request after the restart (a
    // fresh-clone CI run saw no 503 at all).
    const db = createDatabase({ url: stack.databaseUrls.identity, applicationName: 'redis-loss-test', poolMax: 1 });
    const lock = await db.transaction();
    let held = false;
    try {
      await lock.raw('LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE');
      // The promotion: another server (another run id) holding that data; every process connects to it and
      // finds its server replaced.
      await redis.restart({ keepData: true });
      const restarted = Date.now();
      while (!held && Date.now() - restarted < RECOVERY_MS) {
        for (const { why, token, target } of revoked) {
          const res = await get(target, token);
          assert.ok(res.status === 401 || res.status === 503, `${why}: accepted after the loss (${res.status} ${res.body.toString()})`);
        }
        const answers = await Promise.all(live.map(({ token, target }) => get(target, token)));
        for (const res of answers) assert.ok(res.status === 503 || res.status === 200, `a live token got ${res.status}: ${res.body.toString()}`);
        held = answers.some((res) => res.status === 503 && res.json().message === REVOCATIONS_RESTORING_MESSAGE);
        if (!held) await sleep(20);
      }
    } finally {
      await lock.commit();
      await db.destroy();
    }
    assert.ok(held, `bearer requests were not held after the reconnect (no 503 '${REVOCATIONS_RESTORING_MESSAGE}' within ${RECOVERY_MS} ms)`);
    const { tookMs } = await recoverWithoutAcceptingRevoked(Date.now(), revoked, live);
    assert.ok(tookMs <= RECOVERY_MS, `recovered ${tookMs} ms after the re-seed could read the record`);
    await assertRefused(revoked);
    assert.ok((await raw.keys(`${stack.redis.prefix}auth:{rv:*}:session:*`)).length > 0, 'identity did not re-seed');
  });
});
