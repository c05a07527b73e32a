import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, startDeployable } from '@platform/stack';
import { freshEnvironment } from '@platform/auth/testing';
import { TEST_REDIS_URL, type TestRedis, createTestRedis } from '@platform/service-kit/testing';
import { type FakeUpstream, startUpstream } from '../../gateway/test/support/fake-upstream.ts';
import { send } from '../../gateway/test/support/gateway-harness.ts';
import { type TestSigningKey, signedHeaders } from '../../gateway/test/support/signing-client.ts';
import { freePort } from './support/ports.ts';
import { type ServiceProcess, startProcess } from './support/service-process.ts';

const ALICE: TestSigningKey & { alg: 'hmac-sha256' } = { keyId: 'alice', alg: 'hmac-sha256', secret: 'alice-secret-0123456789-abcdef' };
const BOB: TestSigningKey & { alg: 'hmac-sha256' } = { keyId: 'bob', alg: 'hmac-sha256', secret: 'bob-secret-0123456789-abcdefgh' };
const LOGIN = '/v1/auth/login';
const BODY = Buffer.from('{"username":"a@example.com","password":"secret-1"}');
/** CONTRACT.md part 12: a change of the file is in use within 5 s. */
const WITHIN_MS = 5000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type FileKey = TestSigningKey & { alg: 'hmac-sha256'; notAfter?: string };

// CONTRACT.md part 12 through a real gateway process: client keys from GATEWAY_CLIENT_KEYS_FILE, changed
// while it runs, as an operator would (the file replaced whole, as a Kubernetes Secret volume does).
describe('client keys from GATEWAY_CLIENT_KEYS_FILE (real gateway process)', function () {
  this.timeout(60_000);
  let dir: string;
  let file: string;
  let upstream: FakeUpstream;
  let gateway: ServiceProcess;
  let managementUrl: string;
  let testRedis: TestRedis;

  /** Replaces the file in one rename, so the gateway never reads half of it. */
  const publish = async (content: string) => {
    const next = join(dir, `next-${Date.now()}.json`);
    await writeFile(next, content);
    await rename(next, file);
  };
  const keysJson = (...keys: FileKey[]) => JSON.stringify(keys.map(({ keyId, alg, secret, notAfter }) => ({ keyId, alg, secret, ...(notAfter === undefined ? {} : { notAfter }) })));
  const login = (key: TestSigningKey) => send(gateway.url, 'POST', LOGIN, signedHeaders('POST', LOGIN, { key, body: BODY }), BODY);
  /** `gateway_client_keys_file_valid` as the management port's /metrics answers it now. */
  const fileValid = async () => {
    const metrics = await (await fetch(`${managementUrl}/metrics`)).text();
    return Number(/^gateway_client_keys_file_valid\{service="gateway"\} (\d+)$/m.exec(metrics)?.[1]);
  };
  /** Resolves once the gauge says `valid` (it is set at each read, every second), or fails after WITHIN_MS. */
  const gaugeBecomes = async (valid: 0 | 1) => {
    const since = Date.now();
    while ((await fileValid()) !== valid) {
      assert.ok(Date.now() - since < WITHIN_MS, `gateway_client_keys_file_valid did not become ${valid} within ${WITHIN_MS} ms`);
      await sleep(100);
    }
  };
  /** Resolves with the ms it took until `key` is answered `status`, or fails after WITHIN_MS. */
  const takesEffect = async (key: TestSigningKey, status: number, since: number) => {
    for (;;) {
      if ((await login(key)).status === status) return Date.now() - since;
      assert.ok(Date.now() - since < WITHIN_MS, `${key.keyId} was not answered ${status} within ${WITHIN_MS} ms of the change`);
      await sleep(100);
    }
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'client-keys-'));
    file = join(dir, 'client-keys.json');
    await publish(keysJson(ALICE));
    upstream = await startUpstream();
    // A new environment, not a Redis that lost its data: without it the gateway's first claim would find
    // the replay store born that second and refuse every signature created in it (CONTRACT.md part 13).
    testRedis = await createTestRedis('keysfile');
    await freshEnvironment(testRedis.redis);
    const management = await freePort();
    managementUrl = `http://127.0.0.1:${management}`;
    gateway = await startProcess('gateway', {
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: testRedis.keyPrefix,
      IDENTITY_URL: upstream.url,
      RISK_URL: upstream.url,
      IDENTITY_JWKS_URL: `${upstream.url}/.well-known/jwks.json`,
      GATEWAY_CLIENT_KEYS_FILE: file,
      // Ignored: the file wins.
      GATEWAY_CLIENT_KEYS: keysJson(BOB),
      GATEWAY_MANAGEMENT_PORT: String(management),
      LOG_LEVEL: 'info',
    });
    for (let i = 0; i < 100 && (await fetch(`${gateway.url}/health/ready`)).status !== 200; i += 1) await sleep(50);
  });
  after(async () => {
    await gateway?.kill();
    await upstream?.close();
    await testRedis?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('uses the file instead of GATEWAY_CLIENT_KEYS', async () => {
    assert.equal((await login(ALICE)).status, 200);
    assert.equal((await login(BOB)).status, 401);
    assert.equal(await fileValid(), 1);
  });

  it('onboards a key within 5 s of the file changing, without a restart, while the other key\'s requests all go through', async () => {
    let stop = false;
    const steady: number[] = [];
    const traffic = (async () => {
      while (!stop) steady.push((await login(ALICE)).status);
    })();
    await sleep(300);
    const changed = Date.now();
    await publish(keysJson(ALICE, BOB));
    await takesEffect(BOB, 200, changed);
    await sleep(300);
    stop = true;
    await traffic;
    assert.ok(steady.length > 5, 'the steady traffic never ran');
    assert.deepEqual([...new Set(steady)], [200], 'a request of the unchanged key failed during the change');
  });

  it('a key new to the environment, added to the file: its first request after the reload is answered like any other (never 503), and readiness never drops (CONTRACT.md part 12, amended)', async () => {
    const carol: FileKey = { keyId: `carol-${Date.now()}`, alg: 'hmac-sha256', secret: 'carol-secret-0123456789-abcdef' };
    let watching = true;
    const readiness: number[] = [];
    const ready = (async () => {
      while (watching) {
        readiness.push((await fetch(`${managementUrl}/health/ready`)).status);
        await sleep(100);
      }
    })();
    try {
      await publish(keysJson(ALICE, BOB, carol));
      // The 5 s the contract gives a reload, and a margin: then one request, not a retry loop.
      await sleep(WITHIN_MS + 500);
      const first = await login(carol);
      assert.equal(first.status, 200, `the first request signed with a new key: ${first.status} ${first.body.toString()}`);
    } finally {
      watching = false;
      await ready;
    }
    assert.ok(readiness.length > 20 && readiness.every((status) => status === 200), `readiness while a key was new: ${[...new Set(readiness)].join(', ')}`);
    // And with nobody probing readiness meanwhile (nothing but the reload dates the key).
    const dave: FileKey = { keyId: `dave-${Date.now()}`, alg: 'hmac-sha256', secret: 'dave-secret-0123456789-abcdefgh' };
    await publish(keysJson(ALICE, BOB, carol, dave));
    await sleep(WITHIN_MS + 500);
    const unprobed = await login(dave);
    assert.equal(unprobed.status, 200, `the first request signed with a new key, readiness unprobed: ${unprobed.status} ${unprobed.body.toString()}`);
  });

  it('keeps the last valid keys when the file turns invalid, unreadable or empty, and says so in the log without a secret', async () => {
    const before = gateway.output().length;
    assert.equal(await fileValid(), 1);
    for (const bad of ['{ not json', '[]', keysJson({ ...BOB, secret: 'short' }), JSON.stringify([{ keyId: 'carol', alg: 'rsa', secret: 'x' }])]) {
      await publish(bad);
      await sleep(1500);
      assert.equal((await login(ALICE)).status, 200, `after ${bad.slice(0, 20)}`);
      assert.equal((await login(BOB)).status, 200, `after ${bad.slice(0, 20)}`);
      assert.equal(await fileValid(), 0, `after ${bad.slice(0, 20)}`);
    }
    // The same bad content read again and again: logged and counted once, but the gauge stays 0, so an
    // alert on it lasts as long as the file stays bad (the counter's increase would die down).
    await sleep(2500);
    assert.equal(await fileValid(), 0, 'still invalid, seconds later');
    await rm(file);
    await sleep(1500);
    assert.equal((await login(BOB)).status, 200, 'after the file was removed');
    assert.equal(await fileValid(), 0, 'unreadable');
    const log = gateway.output().slice(before);
    assert.match(log, /GATEWAY_CLIENT_KEYS_FILE is not usable; keeping the last valid client keys/);
    assert.match(log, /hmac-sha256 needs a \\"secret\\" of at least 16 bytes/);
    assert.ok(!log.includes(BOB.secret) && !log.includes(ALICE.secret), 'a secret reached the log');
    const metrics = await (await fetch(`${managementUrl}/metrics`)).text();
    assert.match(metrics, /gateway_client_keys_reloads_total\{[^}]*outcome="invalid"[^}]*\} [4-9]/);
    assert.match(metrics, /gateway_client_keys_reloads_total\{[^}]*outcome="unreadable"[^}]*\} [1-9]/);
    // A valid file again is taken up as usual.
    const changed = Date.now();
    await publish(keysJson(BOB));
    await takesEffect(ALICE, 401, changed);
    await gaugeBecomes(1);
  });

  it('refuses a file whose notAfter is an impossible date or time (Feb 30, hour 24) as a whole, keeping the last valid keys', async () => {
    const good = keysJson(ALICE, BOB);
    await publish(good);
    await takesEffect(ALICE, 200, Date.now());
    // Read leniently, each would roll over to a later instant (March 2, January 2) and retire the key late.
    // The file also drops BOB: BOB still passing shows that nothing of the file was taken.
    for (const [notAfter, reason] of [
      ['2026-02-30T00:00:00Z', 'day 30 is not a day of 2026-02 \\(01-28\\)'],
      ['2026-01-01T24:00:00Z', 'hour 24 is not 00-23'],
    ] as const) {
      await publish(good);
      await gaugeBecomes(1);
      const before = gateway.output().length;
      await publish(keysJson({ ...ALICE, notAfter }));
      await gaugeBecomes(0);
      assert.equal((await login(ALICE)).status, 200, `ALICE, after notAfter ${notAfter}`);
      assert.equal((await login(BOB)).status, 200, `BOB, after notAfter ${notAfter}`);
      const line = new RegExp(`"reason":"key \\\\"alice\\\\": notAfter must be an RFC 3339 date-time[^"]*: ${reason}",.*"msg":"GATEWAY_CLIENT_KEYS_FILE is not usable; keeping the last valid client keys"`);
      // The log comes by a pipe, the gauge by a socket: the line may come a moment later.
      for (const deadline = Date.now() + 3000; !line.test(gateway.output().slice(before)) && Date.now() < deadline; ) await sleep(20);
      assert.match(gateway.output().slice(before), line);
    }
    await publish(good);
    await gaugeBecomes(1);
  });

  it('counts the file valid again when it is put back as it was before it went bad', async () => {
    await publish(keysJson(BOB));
    await gaugeBecomes(1);
    await publish('{ not json');
    await gaugeBecomes(0);
    // The content in use, unchanged: nothing to apply, nothing is wrong.
    await publish(keysJson(BOB));
    await gaugeBecomes(1);
    assert.equal((await login(BOB)).status, 200);
  });

  it('retires a key at its notAfter: its signatures are 401 from then on, the reason in the log', async () => {
    const at = new Date(Date.now() + 3000);
    await publish(keysJson({ ...ALICE, notAfter: at.toISOString() }, BOB));
    await takesEffect(ALICE, 200, Date.now());
    await sleep(Math.max(0, at.getTime() - Date.now()));
    const retired = await login(ALICE);
    assert.equal(retired.status, 401);
    assert.equal(retired.json().message, 'Invalid request signature');
    // The gateway's log comes through a pipe, its answer through a socket: the line may come a moment later.
    for (const deadline = Date.now() + 3000; !/key \\"alice\\" retired at/.test(gateway.output()) && Date.now() < deadline; ) await sleep(20);
    assert.match(gateway.output(), /key \\"alice\\" retired at/);
    assert.equal((await login(BOB)).status, 200);
    // A notAfter already past refuses the key as soon as the file is read.
    const changed = Date.now();
    await publish(keysJson(ALICE, { ...BOB, notAfter: '2020-01-01T00:00:00Z' }));
    await takesEffect(BOB, 401, changed);
    assert.equal((await login(ALICE)).status, 200);
  });

  it('can be checked before it is applied, with the gateway\'s own parser (check-client-keys), never printing a secret', async () => {
    const check = async (content: string) => {
      const path = join(dir, `check-${Date.now()}.json`);
      await writeFile(path, content);
      const child = spawn(process.execPath, ['--conditions=development', '--disable-warning=ExperimentalWarning', 'gateway/src/check-client-keys.ts', path], { cwd: REPO_ROOT });
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c.toString()));
      child.stderr.on('data', (c: Buffer) => (output += c.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      return { code, output };
    };
    const good = await check(keysJson(ALICE, { ...BOB, notAfter: '2020-01-01T00:00:00Z' }));
    assert.equal(good.code, 0, good.output);
    assert.equal(good.output, 'alice hmac-sha256\nbob hmac-sha256 notAfter 2020-01-01T00:00:00.000Z (already retired)\n');
    const bad = await check(keysJson(ALICE, { ...BOB, keyId: 'alice' }));
    assert.equal(bad.code, 1);
    assert.match(bad.output, /keyId "alice" appears twice: the gateway would keep its last valid keys/);
    assert.ok(!bad.output.includes(ALICE.secret));
    const impossible = await check(keysJson({ ...ALICE, notAfter: '2026-02-30T00:00:00Z' }));
    assert.equal(impossible.code, 1);
    assert.match(impossible.output, /key "alice": notAfter must be an RFC 3339 date-time.*day 30 is not a day of 2026-02.*: the gateway would keep its last valid keys/);
  });

  it('refuses to start when the file holds no valid keys, saying why', async () => {
    const broken = join(dir, 'broken.json');
    await writeFile(broken, '[{"keyId":"x"}]');
    const started = await startDeployable('gateway', {
      env: { PATH: process.env.PATH, APP_ENV: 'local', GATEWAY_CLIENT_KEYS_FILE: broken, GATEWAY_MANAGEMENT_PORT: String(await freePort()), REDIS_URL: TEST_REDIS_URL },
      output: 'capture',
      readiness: 'none',
    });
    assert.equal(await started.exited, 1);
    assert.match(started.output(), /GATEWAY_CLIENT_KEYS_FILE holds no valid client keys/);
    assert.match(started.output(), /alg must be hmac-sha256 or ed25519/);
  });
});
