import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type FakeGateway, defaultHandler, errorReply, startFakeGateway } from './support/fake-gateway.ts';
import { verifyRecorded } from './support/verify-signature.ts';

const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const tokens = { username: 'admin@example.com', type: 'Bearer', accessToken: 'access-saved', refreshToken: 'refresh-saved' };

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI as `pnpm cli` does, asynchronously so the fake gateway in this process can answer. */
function runCli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--conditions=development', '--disable-warning=ExperimentalWarning', cli, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

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
