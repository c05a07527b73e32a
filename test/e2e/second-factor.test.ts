import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, type Client, createClient } from '@platform/client';
import { generate } from 'otplib';
import { runCli } from '../../packages/client/test/support/run-cli.ts';
import { type CaptureServer, startCaptureServer } from '../../services/identity/test/support/capture-server.ts';
import { type Stack, startStack } from './support/stack.ts';

const STEP_S = 30;
const LOCAL_KEY = { keyId: 'local-dev', secret: 'local-dev-secret' };

/** A real authenticator's code for the `otpauth://` URI the API gave, `offset` steps from now. */
const codeOf = (otpauthUri: string, offset = 0): Promise<string> =>
  generate({ secret: new URL(otpauthUri).searchParams.get('secret') ?? '', epoch: Math.floor(Date.now() / 1000) + offset * STEP_S });

/** Not within 2 s of a step's end: a code computed now is the gateway's current one when it arrives. */
async function midStep(): Promise<void> {
  const into = (Date.now() / 1000) % STEP_S;
  if (into > STEP_S - 2) await sleep((STEP_S - into + 0.2) * 1000);
}

/**
 * CONTRACT.md part 15 as an operator and a user meet it, through the gateway with the SDK and the CLI, in
 * the settings of `test` and `prod` (SECOND_FACTOR_REQUIRED_ROLES=ADMIN): the first ADMIN of a new
 * environment enrols its factor with an authenticator app (otplib reading the otpauth:// URI), and a user
 * who chose one shows it at every login; risk and identity called directly refuse an aal 1 ADMIN token too.
 */
describe('end to end: the second factor (CONTRACT.md part 15)', function () {
  this.timeout(120_000);
  let stack: Stack;
  let mail: CaptureServer;
  let sms: CaptureServer;

  before(async () => {
    mail = await startCaptureServer();
    sms = await startCaptureServer();
    stack = await startStack({ mailUrl: mail.url, smsUrl: sms.url }, { SECOND_FACTOR_REQUIRED_ROLES: 'ADMIN' });
  });
  after(async () => {
    await stack?.stop();
    await mail?.close();
    await sms?.close();
  });

  const client = (): Client => createClient({ env: 'local', baseUrl: stack.gatewayUrl, keyId: LOCAL_KEY.keyId, key: { alg: 'hmac-sha256', secret: LOCAL_KEY.secret } });
  async function refused(call: () => Promise<unknown>): Promise<ApiError> {
    try {
      await call();
    } catch (err) {
      if (err instanceof ApiError) return err;
      throw err;
    }
    assert.fail('the call was expected to be refused');
  }
  let adminUri = '';
  /** The ADMIN's recovery codes: each test after the first shows one (a TOTP step is used once, and time moves slowly).  */
  let adminRecovery: string[] = [];

  it('the first ADMIN of a new environment: its password opens only enrolment; enrolled, it holds its powers at aal 2', async () => {
    const admin = client();
    await admin.auth.login(stack.admin);
    assert.equal(admin.auth.needsSecondFactor(), true);
    const blocked = await refused(() => admin.users.find({}));
    assert.deepEqual([blocked.status, blocked.body?.message], [403, 'Second factor required']);
    // Direct calls with the same aal 1 token: identity and risk refuse it as the gateway does.
    const token = admin.getTokens()?.accessToken ?? '';
    for (const url of [`${stack.identityUrl}/v1/users`, `${stack.riskUrl}/v1/weather-stations/get-cities`]) {
      const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 403, url);
      assert.equal(((await res.json()) as { message: string }).message, 'Second factor required');
    }
    assert.equal((await admin.sessions.list()).items.length, 1, 'the sessions are listed at aal 1');
    const enrolment = await admin.factors.enrollTotp();
    adminUri = enrolment.otpauthUri;
    await midStep();
    const confirmed = await admin.factors.confirmTotp({ factorId: enrolment.factorId, code: await codeOf(adminUri) });
    assert.equal(confirmed.recoveryCodes.length, 10);
    adminRecovery = confirmed.recoveryCodes;
    await admin.auth.refresh();
    assert.equal(admin.auth.needsSecondFactor(), false);
    assert.ok((await admin.users.find({})).items.length >= 1);
  });

  it('a user who chose a factor shows it at each login: until then 403 on the stations, after it 200; a wrong code is 401 Invalid code', async () => {
    const admin = client();
    await admin.auth.login(stack.admin);
    await admin.auth.secondFactor({ recoveryCode: adminRecovery[0] ?? '' });
    const password = 'a-good-password-1';
    const user = await admin.users.create({
      username: `user-${randomUUID()}@example.com`,
      password,
      firstName: 'Ayşe',
      lastName: 'Yılmaz',
      locale: 'tr_TR',
      timezone: 'Europe/Istanbul',
      roles: ['STANDARD_USER'],
      status: 'ACTIVE',
    });
    const owner = client();
    await owner.auth.login({ username: user.username, password });
    assert.equal(owner.auth.needsSecondFactor(), false, 'a user without a factor is not asked for one');
    assert.ok((await owner.stations.cities()).length > 0);
    const enrolment = await owner.factors.enrollTotp();
    await midStep();
    await owner.factors.confirmTotp({ factorId: enrolment.factorId, code: await codeOf(enrolment.otpauthUri) });
    const later = client();
    await later.auth.login({ username: user.username, password });
    assert.equal(later.auth.needsSecondFactor(), true);
    assert.equal((await refused(() => later.stations.cities())).status, 403);
    const wrong = await refused(() => later.auth.secondFactor({ code: '000000' }));
    assert.deepEqual([wrong.status, wrong.body?.message], [401, 'Invalid code']);
    await later.auth.secondFactor({ code: await codeOf(enrolment.otpauthUri, 1) });
    assert.ok((await later.stations.cities()).length > 0);
  });

  it('pnpm cli: login asks for the code of an account with a factor (here --code, a recovery code), then acts at aal 2; factors list shows no secret', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cli-second-factor-'));
    try {
      const flags = ['--base-url', stack.gatewayUrl, '--key-id', LOCAL_KEY.keyId, '--secret', LOCAL_KEY.secret, '--token-file', join(dir, 'admin.json')];
      // A recovery code where a code goes: the CLI tells them apart.
      const login = await runCli(['login', stack.admin.username, '--password', stack.admin.password, '--code', adminRecovery[1] ?? '', ...flags]);
      assert.equal(login.code, 0, login.stderr);
      assert.equal((JSON.parse(login.stdout) as { secondFactor: string }).secondFactor, 'verified');
      const find = await runCli(['users', 'find', '--limit', '1', ...flags]);
      assert.equal(find.code, 0, find.stderr);
      const list = await runCli(['factors', 'list', ...flags]);
      assert.equal(list.code, 0, list.stderr);
      assert.deepEqual((JSON.parse(list.stdout) as Array<{ status: string }>).map((f) => f.status), ['ACTIVE']);
      assert.ok(!list.stdout.includes(new URL(adminUri).searchParams.get('secret') ?? '-'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('pnpm cli factors enroll prints the otpauth:// URI, and its QR code on stderr in block characters only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cli-enroll-'));
    try {
      const admin = client();
      await admin.auth.login(stack.admin);
      const password = 'another-good-password-2';
      const user = await (async () => {
        await admin.auth.secondFactor({ recoveryCode: adminRecovery[2] ?? '' });
        return admin.users.create({
          username: `cli-${randomUUID()}@example.com`,
          password,
          firstName: 'Can',
          lastName: 'Demir',
          locale: 'tr_TR',
          timezone: 'Europe/Istanbul',
          roles: ['STANDARD_USER'],
          status: 'ACTIVE',
        });
      })();
      const flags = ['--base-url', stack.gatewayUrl, '--key-id', LOCAL_KEY.keyId, '--secret', LOCAL_KEY.secret, '--token-file', join(dir, 'user.json')];
      assert.equal((await runCli(['login', user.username, '--password', password, ...flags])).code, 0);
      const enrol = await runCli(['factors', 'enroll', ...flags]);
      assert.equal(enrol.code, 0, enrol.stderr);
      const enrolment = JSON.parse(enrol.stdout) as { factorId: string; otpauthUri: string };
      assert.match(enrolment.otpauthUri, /^otpauth:\/\/totp\//);
      assert.match(enrol.stderr, /[█▀▄]/);
      assert.ok(!enrol.stderr.includes(String.fromCharCode(27)), 'an escape sequence reached the terminal');
      await midStep();
      const confirm = await runCli(['factors', 'confirm', enrolment.factorId, '--code', await codeOf(enrolment.otpauthUri), ...flags]);
      assert.equal(confirm.code, 0, confirm.stderr);
      assert.equal((JSON.parse(confirm.stdout) as { recoveryCodes: string[] }).recoveryCodes.length, 10);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
