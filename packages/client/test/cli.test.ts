import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FakeGateway, defaultHandler, errorReply, startFakeGateway } from './support/fake-gateway.ts';
import { HOSTILE, rawHostile } from './support/hostile-text.ts';
import { runCli } from './support/run-cli.ts';
import { verifyRecorded } from './support/verify-signature.ts';

const tokens = { username: 'admin@example.com', type: 'Bearer', accessToken: 'access-saved', refreshToken: 'refresh-saved' };

describe('pnpm cli', () => {
  let gw: FakeGateway;
  let dir: string;
  let tokenFile: string;
  let flags: string[];

  beforeEach(async () => {
    gw = await startFakeGateway();
    dir = mkdtempSync(join(tmpdir(), 'platform-cli-'));
    tokenFile = join(dir, 'tokens.json');
    flags = ['--base-url', gw.url, '--token-file', tokenFile];
    writeFileSync(tokenFile, JSON.stringify(tokens));
  });
  afterEach(async () => {
    await gw.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stations cities: prints the JSON array, signed with the local default key and the saved bearer', async () => {
    const run = await runCli(['stations', 'cities', ...flags]);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), ['Adana', 'Adıyaman', 'İstanbul']);
    const parsed = verifyRecorded(gw.requests[0]!, { alg: 'hmac-sha256', secret: 'local-dev-secret' });
    assert.equal(parsed.keyId, 'local-dev');
    assert.equal(gw.requests[0]!.headers.authorization, 'Bearer access-saved');
  });

  it('login: reads the password from PASSWORD, saves the tokens with mode 0600 and prints no token', async () => {
    rmSync(tokenFile);
    const run = await runCli(['login', 'admin@example.com', ...flags], { PASSWORD: 'local-admin-password' });
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(gw.requests[0]!.json, { username: 'admin@example.com', password: 'local-admin-password' });
    assert.deepEqual(JSON.parse(run.stdout), { username: 'user@example.com', tokenFile });
    assert.doesNotMatch(run.stdout, /access-0|refresh-0/);
    assert.equal(statSync(tokenFile).mode & 0o777, 0o600);
    assert.equal(JSON.parse(readFileSync(tokenFile, 'utf8')).refreshToken, 'refresh-0');
  });

  it('saves the rotated tokens after an automatic refresh', async () => {
    gw.handler = (req, i) => (i === 0 ? errorReply(401, 'Unauthorized', 'Bad Credentials', req.url) : defaultHandler(req, i));
    const run = await runCli(['stations', 'cities', ...flags]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(JSON.parse(readFileSync(tokenFile, 'utf8')).refreshToken, 'refresh-1');
  });

  it('logout: sends the saved access token and deletes the token file', async () => {
    const run = await runCli(['logout', ...flags]);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(gw.requests[0]!.json, { jwtToken: 'access-saved' });
    assert.throws(() => statSync(tokenFile), { code: 'ENOENT' });
  });

  it('stations nearest --output table: a header row and one row per station', async () => {
    gw.handler = () => ({
      status: 200,
      body: [
        { stationId: 17060, stationName: 'İstanbul Kumköy', latitude: 41.25, longitude: 29.04, city: 'İstanbul', district: 'Sarıyer', distanceKm: 3.5 },
        { stationId: 17064, stationName: 'Kartal', latitude: 40.9, longitude: 29.18, city: 'İstanbul', district: 'Kartal', distanceKm: 12.25 },
      ],
    });
    const run = await runCli(['stations', 'nearest', '41.2', '29.0', '--limit', '2', '--output', 'table', ...flags]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(gw.requests[0]!.url, '/v1/weather-stations/nearest?latitude=41.2&longitude=29&limit=2');
    const lines = run.stdout.trimEnd().split('\n');
    assert.equal(lines.length, 3);
    assert.match(lines[0]!, /^stationId\s+stationName\s+latitude\s+longitude\s+city\s+district\s+distanceKm$/);
    assert.match(lines[2]!, /^17064\s+Kartal\s+40\.9\s+29\.18\s+İstanbul\s+Kartal\s+12\.25$/);
  });

  it('users create: builds the body from flags, signed with PLATFORM_KEY_ID / PLATFORM_KEY_SECRET', async () => {
    const run = await runCli(
      ['users', 'create', '--username', 'new@example.com', '--first-name', 'Ayşe', '--last-name', 'Yılmaz', '--locale', 'tr_TR', '--timezone', 'Europe/Istanbul', '--roles', 'STANDARD_USER,POWER_USER', '--status', 'ACTIVE', '--env', 'test', ...flags],
      { PLATFORM_KEY_ID: 'ops-key', PLATFORM_KEY_SECRET: 'ops-secret' },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(verifyRecorded(gw.requests[0]!, { alg: 'hmac-sha256', secret: 'ops-secret' }).keyId, 'ops-key');
    assert.deepEqual(gw.requests[0]!.json, {
      username: 'new@example.com',
      firstName: 'Ayşe',
      lastName: 'Yılmaz',
      locale: 'tr_TR',
      timezone: 'Europe/Istanbul',
      roles: ['STANDARD_USER', 'POWER_USER'],
      status: 'ACTIVE',
    });
  });

  describe('operators\' lists and sessions (users find, users get, audit, sessions list|revoke)', () => {
    const USER_ID = '3f1c2a4e-8b7d-4c6e-9a1f-2b3c4d5e6f70';
    const users = [
      { userId: USER_ID, username: 'ayse@example.com', firstName: 'Ayşe', lastName: 'Yılmaz', locale: 'tr_TR', timezone: 'Europe/Istanbul', roles: ['STANDARD_USER', 'POWER_USER'], status: 'BLOCKED', account: { id: 'a-1' } },
      { userId: '8f14e45f-ceea-467f-a0e6-0f5b3c8a1d2e', username: 'ali@example.com', firstName: 'Ali', lastName: 'Kaya', locale: 'tr_TR', timezone: 'UTC', roles: ['GUEST'], status: 'BLOCKED' },
    ];

    it('users find --output table: the chosen columns, one row per user, then the cursor of the next page', async () => {
      gw.handler = () => ({ status: 200, body: { items: users, nextCursor: 'bmV4dA' } });
      const run = await runCli(['users', 'find', '--status', 'BLOCKED', '--q', 'ay', '--limit', '2', '--output', 'table', ...flags]);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(gw.requests[0]!.url, '/v1/users?q=ay&status=BLOCKED&limit=2');
      const lines = run.stdout.trimEnd().split('\n');
      assert.match(lines[0]!, /^userId\s+username\s+firstName\s+lastName\s+status\s+roles$/);
      assert.match(lines[1]!, new RegExp(`^${USER_ID}\\s+ayse@example.com\\s+Ayşe\\s+Yılmaz\\s+BLOCKED\\s+STANDARD_USER,POWER_USER$`));
      assert.equal(lines.length, 5);
      assert.equal(lines[4], 'more: --cursor bmV4dA');
    });

    it('users find --all: follows every cursor and prints all users as one JSON array', async () => {
      gw.handler = (req) =>
        new URL(req.url, 'http://x').searchParams.get('cursor') === null
          ? { status: 200, body: { items: [users[0]], nextCursor: 'c1' } }
          : { status: 200, body: { items: [users[1]], nextCursor: null } };
      const run = await runCli(['users', 'find', '--status', 'BLOCKED', '--all', ...flags]);
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(JSON.parse(run.stdout), users);
      assert.deepEqual(gw.requests.map((r) => r.url), ['/v1/users?status=BLOCKED', '/v1/users?status=BLOCKED&cursor=c1']);
    });

    it('users get <userId> and audit --subject … --type …: one GET each, the filters as query', async () => {
      gw.handler = (req) => (req.url.startsWith('/v1/audit') ? { status: 200, body: { items: [], nextCursor: null } } : { status: 200, body: users[0] });
      assert.equal((await runCli(['users', 'get', USER_ID, ...flags])).code, 0);
      const audit = await runCli(['audit', '--subject', USER_ID, '--type', 'user.unblocked', '--since', '2025-06-01T00:00:00Z', '--output', 'table', ...flags]);
      assert.equal(audit.code, 0, audit.stderr);
      assert.match(audit.stdout, /^at\s+type\s+actorUserId\s+subjectUserId\s+clientKeyId\s+sourceAddress\s+details\n$/);
      assert.deepEqual(gw.requests.map((r) => [r.method, r.url]), [
        ['GET', `/v1/users/${USER_ID}`],
        ['GET', `/v1/audit/events?subjectUserId=${USER_ID}&type=user.unblocked&since=2025-06-01T00%3A00%3A00Z`],
      ]);
    });

    it('sessions list --output table, sessions revoke <sessionId>, sessions revoke --all --user-id …', async () => {
      const session = { sessionId: 's-1', createdAt: '2025-06-01T10:00:00.000Z', lastUsedAt: '2025-06-01T10:05:00.000Z', expiresAt: '2025-06-01T11:00:00.000Z', clientKeyId: 'local-dev', sourceAddress: '10.0.0.7', current: true };
      gw.handler = (req) => (req.method === 'DELETE' ? { status: 204 } : { status: 200, body: { items: [session], nextCursor: null } });
      const list = await runCli(['sessions', 'list', '--output', 'table', ...flags]);
      assert.equal(list.code, 0, list.stderr);
      assert.match(list.stdout.split('\n')[1]!, /^s-1\s+true\s+2025-06-01T10:00:00.000Z\s+2025-06-01T10:05:00.000Z\s+2025-06-01T11:00:00.000Z\s+local-dev\s+10\.0\.0\.7$/);
      const one = await runCli(['sessions', 'revoke', 's-1', ...flags]);
      assert.deepEqual([one.code, one.stdout], [0, '']);
      const all = await runCli(['sessions', 'revoke', '--all', '--user-id', USER_ID, ...flags]);
      assert.deepEqual([all.code, all.stdout], [0, '']);
      assert.deepEqual(gw.requests.map((r) => [r.method, r.url]), [
        ['GET', '/v1/auth/sessions'],
        ['DELETE', '/v1/auth/sessions/s-1'],
        ['DELETE', `/v1/auth/sessions?userId=${USER_ID}`],
      ]);
    });

    it('sessions revoke without a session or with both a session and --all or --user-id: a usage error, nothing sent', async () => {
      for (const args of [['sessions', 'revoke'], ['sessions', 'revoke', 's-1', '--all'], ['sessions', 'revoke', 's-1', '--user-id', USER_ID], ['users', 'find', '--limit', 'ten']]) {
        const run = await runCli([...args, ...flags]);
        assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      }
      assert.equal(gw.requests.length, 0);
    });
  });

  describe('text from the API that would act on the terminal (ESC, CR, LF, BEL, C1, bidi controls)', () => {
    // Every hostile character of the list in one name, and the classic attacks spelled out.
    const every = HOSTILE.map(([, char]) => char).join('');
    const forgedRow = '\r\n00000000-0000-0000-0000-000000000000  admin@example.com  Admin  Root  ACTIVE  ADMIN';
    const title = '\u001b]0;owned\u0007\u001b[2J\u009b31m';
    const user = { userId: 'u-1', username: 'eve@example.com', firstName: `Eve${forgedRow}`, midName: every, lastName: `\u202e${title}evE`, locale: 'tr_TR', timezone: 'UTC', roles: ['GUEST'], status: 'ACTIVE' };
    const answers: Record<string, unknown> = {
      '/v1/users': { items: [user], nextCursor: `c${title}` },
      '/v1/users/u-1': user,
      '/v1/audit/events': { items: [{ id: 'e-1', type: 'login.failed', at: '2025-06-01T10:00:00.000Z', actorUserId: null, subjectUserId: null, clientKeyId: `k${every}`, sourceAddress: '10.0.0.7', requestId: 'r', details: { username: `x${forgedRow}${title}` } }], nextCursor: null },
      '/v1/auth/sessions': { items: [{ sessionId: 's-1', createdAt: 'now', lastUsedAt: 'now', expiresAt: 'later', clientKeyId: title, sourceAddress: every, current: true }], nextCursor: null },
      '/v1/accounts/u-1': { id: 'a-1', userId: 'u-1', type: 'INDIVIDUAL', location: every, company: title, industry: forgedRow, mobilePhoneNumber: `+90${every}` },
      '/v1/weather-stations/get-cities': ['Adana', `İstanbul${forgedRow}${title}`],
    };
    const commands = [['users', 'find'], ['users', 'get', 'u-1'], ['audit'], ['sessions', 'list'], ['accounts', 'get', 'u-1'], ['stations', 'cities']];

    for (const output of ['table', 'json']) {
      it(`--output ${output}: users find, users get, audit, sessions list, accounts get, stations cities print every such character escaped`, async () => {
        gw.handler = (req) => ({ status: 200, body: answers[req.url.split('?')[0]!] });
        for (const command of commands) {
          const run = await runCli([...command, '--output', output, ...flags]);
          assert.equal(run.code, 0, `${command.join(' ')}: ${run.stderr}`);
          assert.equal(rawHostile(run.stdout.slice(0, -1).replaceAll('\n', '')), undefined, `${command.join(' ')} printed it raw: ${JSON.stringify(run.stdout)}`);
          assert.equal(rawHostile(run.stderr), undefined);
          if (output === 'json') assert.deepEqual(JSON.parse(run.stdout), answers[gw.requests.at(-1)!.url.split('?')[0]!], 'JSON output means what the API sent');
        }
      });
    }

    it('--output table: a line break in a name never makes a row of its own', async () => {
      gw.handler = () => ({ status: 200, body: answers['/v1/users'] });
      const run = await runCli(['users', 'find', '--output', 'table', ...flags]);
      const lines = run.stdout.trimEnd().split('\n');
      assert.equal(lines.length, 4, run.stdout);
      assert.match(lines[1]!, /^u-1\s+eve@example\.com\s+Eve\\u000d\\u000a00000000-/);
      assert.equal(lines[3], 'more: --cursor c\\u001b]0;owned\\u0007\\u001b[2J\\u009b31m');
    });

    it('an error body (message, messages, path) prints escaped on stderr, and stays JSON', async () => {
      const body = { timestamp: 'now', status: 400, error: `Bad${title}`, message: `no${forgedRow}`, messages: [every], path: `/v1/users/u-1${title}` };
      gw.handler = () => ({ status: 400, body });
      const run = await runCli(['users', 'get', 'u-1', ...flags]);
      assert.equal(run.code, 1);
      assert.equal(rawHostile(run.stderr.slice(0, -1).replaceAll('\n', '')), undefined, JSON.stringify(run.stderr));
      assert.deepEqual(JSON.parse(run.stderr), body);
    });

    it('an answer that is not an error body (a proxy\'s text page) prints escaped on stderr', async () => {
      gw.handler = () => ({ status: 502, body: `<h1>Bad gateway${forgedRow}${title}</h1>` });
      const run = await runCli(['users', 'get', 'u-1', ...flags]);
      assert.equal(run.code, 1);
      assert.equal(rawHostile(run.stderr.slice(0, -1).replaceAll('\n', '')), undefined, JSON.stringify(run.stderr));
      assert.match(run.stderr, /Bad gateway\\r\\n00000000.*\\u001b\]0;owned\\u0007\\u001b\[2J\\u009b31m/);
    });
  });

  it('an error answer: prints the error body to stderr and exits 1', async () => {
    gw.handler = (req) => errorReply(404, 'Not Found', 'City not found', req.url, { messages: ['City not found: Atlantis'] });
    const run = await runCli(['stations', 'districts', 'Atlantis', ...flags]);
    assert.equal(run.code, 1);
    assert.equal(run.stdout, '');
    const body = JSON.parse(run.stderr);
    assert.equal(body.status, 404);
    assert.equal(body.message, 'City not found');
    assert.equal(body.path, '/v1/weather-stations/get-districts-of/Atlantis');
  });

  it('a usage mistake (unknown command, flag, env, missing key in prod): exits 2 and sends nothing', async () => {
    for (const args of [['stations', 'planets'], ['stations', 'cities', '--colour'], ['stations', 'cities', '--env', 'staging'], ['stations', 'by-id', 'x'], ['stations', 'cities', '--env', 'prod']]) {
      const run = await runCli([...args, ...flags]);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, /usage: pnpm cli/);
    }
    assert.equal(gw.requests.length, 0);
  });
});
