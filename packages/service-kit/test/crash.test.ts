import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const FIXTURE = fileURLToPath(new URL('./fixtures/uncaught-error-app.ts', import.meta.url));

/** Starts the fixture, waits for its listen line, calls `path` with a request id, and waits for the exit. */
async function crashWith(path: string, requestId: string): Promise<{ code: number | null; lines: Array<Record<string, unknown>> }> {
  const child = spawn(process.execPath, ['--conditions=development', '--disable-warning=ExperimentalWarning', FIXTURE], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, 'exit') as Promise<[number | null]>;
  const deadline = Date.now() + 15_000;
  let url: string | undefined;
  while (url === undefined && Date.now() < deadline) {
    url = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(output)?.[1];
    if (url === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.ok(url, `the fixture did not listen:\n${output}`);
  await fetch(`${url}${path}`, { headers: { 'x-request-id': requestId }, signal: AbortSignal.timeout(5000) }).catch(() => undefined);
  const [code] = await exited;
  const lines = output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { code, lines };
}

describe('an error nothing caught', function () {
  this.timeout(30_000);

  for (const [path, message] of [
    ['/throw-later', 'thrown where nothing catches it'],
    ['/reject-later', 'rejected with nobody waiting'],
  ] as const) {
    it(`when ${path} leaves it behind, is logged once as fatal with the request id, and the process exits 1`, async () => {
      const { code, lines } = await crashWith(path, `crash-${path.slice(1)}`);
      assert.equal(code, 1);
      const fatal = lines.filter((line) => line.level === 'fatal');
      assert.equal(fatal.length, 1, JSON.stringify(lines));
      // The process's own id of the request (a caller's X-Request-Id is only logged beside it).
      const handling = lines.find((line) => line.msg === 'about to fail') as { req?: { id?: string; clientRequestId?: string } } | undefined;
      assert.equal(handling?.req?.clientRequestId, `crash-${path.slice(1)}`);
      assert.match(String(fatal[0]?.requestId), /^[0-9a-f-]{36}$/);
      assert.equal(fatal[0]?.requestId, handling?.req?.id);
      assert.equal((fatal[0]?.err as { message?: string } | undefined)?.message, message);
    });
  }
});
