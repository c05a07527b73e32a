import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { dropDatabase } from '@platform/service-kit/database';
import { uniqueName } from '@platform/service-kit/testing';
import { REPO_ROOT } from './deploy-support/deployables.ts';
import { freePort, testDatabaseUrl, waitUntilOk } from './support/processes.ts';

/**
 * The environment of a terminal: without the variables pnpm sets for the script running this test, and
 * without any node_modules/.bin on PATH (there `node` is a shell wrapper, which a terminal's Ctrl-C kills).
 */
function terminalEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(npm_|PNPM_|NODE_OPTIONS$|INIT_CWD$)/i.test(name)));
  env.PATH = (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => !dir.includes('node_modules'))
    .join(':');
  return { ...env, ...extra };
}

/** Runs `pnpm <args>` in `cwd` in a process group of its own (a terminal's foreground job); output captured. */
function pnpm(cwd: string, args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; output: () => string; exited: Promise<{ code: number | null; signal: string | null }> } {
  const child = spawn('pnpm', args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  return { child, output: () => output, exited };
}

// What a newcomer meets first, on a copy of the working tree as a fresh clone has it (tracked and new files,
// no node_modules, nothing built): the install and `pnpm start` stopped with Ctrl-C, read as they would.
describe('a fresh clone: pnpm install, then pnpm start stopped with Ctrl-C', function () {
  this.timeout(120_000);
  let dir = '';
  let install = { code: null as number | null, output: '' };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fresh-clone-'));
    const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: REPO_ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
    for (const file of files) {
      if (!existsSync(join(REPO_ROOT, file))) continue;
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      copyFileSync(join(REPO_ROOT, file), join(dir, file));
    }
    // Offline: every package is in the store already (the machine installed this lockfile to run the tests).
    const run = pnpm(dir, ['install', '--frozen-lockfile', '--offline'], terminalEnv({}));
    const { code } = await run.exited;
    install = { code, output: run.output() };
  });
  after(() => {
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  it('pnpm install --frozen-lockfile succeeds without a warning (every bin can be linked before a build)', () => {
    assert.equal(install.code, 0, install.output);
    assert.doesNotMatch(install.output, /WARN/, install.output);
    assert.ok(existsSync(join(dir, 'node_modules', '.bin', 'platform-cli')), 'platform-cli was not linked');
  });

  it('pnpm start, stopped by Ctrl-C (SIGINT to its process group, as a terminal sends it), exits 0 and reports no failure', async () => {
    const ports = { GATEWAY_PORT: await freePort(), GATEWAY_MANAGEMENT_PORT: await freePort(), IDENTITY_PORT: await freePort(), RISK_PORT: await freePort() };
    const databases = { IDENTITY_DATABASE_URL: testDatabaseUrl(uniqueName('clone_identity')), RISK_DATABASE_URL: testDatabaseUrl(uniqueName('clone_risk')) };
    const start = pnpm(dir, ['start'], terminalEnv({ APP_ENV: 'local', EMBEDDED_FALLBACK: 'off', ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])), ...databases }));
    try {
      const deadline = Date.now() + 60_000;
      for (const port of Object.values(ports)) assert.ok(await waitUntilOk(`http://127.0.0.1:${port}/health/ready`, deadline), start.output());
      process.kill(-start.child.pid!, 'SIGINT');
      const { code, signal } = await start.exited;
      assert.deepEqual({ code, signal }, { code: 0, signal: null }, start.output());
      assert.doesNotMatch(start.output(), /ELIFECYCLE|Command failed/, start.output());
      assert.match(start.output(), /"service":"start-local","msg":"stopped"/);
    } finally {
      if (start.child.exitCode === null && start.child.signalCode === null) {
        process.kill(-start.child.pid!, 'SIGINT');
        await start.exited;
      }
      for (const url of Object.values(databases)) await dropDatabase(url);
    }
  });
});
