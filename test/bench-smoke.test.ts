import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

interface WrittenReport {
  results: Array<{ id: string; load: { requests: number; rps: number; non2xx: number; errors: number } }>;
  targets: Array<{ name: string; met: boolean | null }>;
}

// The benchmark itself is `pnpm bench` (minutes, bench/README.md); this only proves the harness runs:
// the limit scenarios need no stack, so one second of each is enough.
describe('pnpm bench (bench/run.ts), smoke', function () {
  this.timeout(60_000);

  it('runs the limit scenarios for a second, prints the table and writes the JSON', async () => {
    const resultsDir = await mkdtemp(join(tmpdir(), 'bench-smoke-'));
    try {
      const child = spawn(process.execPath, ['--conditions=development', '--disable-warning=ExperimentalWarning', 'bench/run.ts'], {
        cwd: root,
        env: { ...process.env, BENCH_ONLY: 'limits', BENCH_DURATION_S: '1', BENCH_WARMUP_S: '0', BENCH_CONNECTIONS: '4', BENCH_RESULTS_DIR: resultsDir },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c.toString()));
      child.stderr.on('data', (c: Buffer) => (output += c.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      assert.equal(code, 0, output);
      assert.match(output, /limit A: bare node:http/);
      assert.match(output, /limit B: bare Express 5/);

      const report = JSON.parse(await readFile(join(resultsDir, 'latest.json'), 'utf8')) as WrittenReport;
      assert.deepEqual(
        report.results.map((r) => r.id),
        ['limit-a', 'limit-b'],
      );
      for (const { id, load } of report.results) {
        assert.ok(load.requests > 0 && load.rps > 0, `${id} answered nothing`);
        assert.equal(load.non2xx + load.errors, 0, `${id} had failures`);
      }
      // Targets whose scenarios did not run are reported as such, not as met or missed.
      assert.ok(report.targets.every((t) => t.met === null || t.met === undefined));
    } finally {
      await rm(resultsDir, { recursive: true, force: true });
    }
  });
});

describe('pnpm bench: the services run with their images NODE_OPTIONS', () => {
  it('reads the same value from each Dockerfile as the deployment checks do', async () => {
    const { imageNodeOptions } = await import('../bench/stack.ts');
    const { DEPLOYABLES, imageEnv } = await import('./deploy-support/deployables.ts');
    for (const d of DEPLOYABLES) {
      const fromImage = imageEnv(root, d).get('NODE_OPTIONS');
      assert.ok(fromImage !== undefined && 'literal' in fromImage, `${d.name}'s image sets no NODE_OPTIONS`);
      assert.equal(imageNodeOptions(d.name), fromImage.literal);
    }
  });
});
