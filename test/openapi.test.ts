import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { SERVICES, typesFileOf, typesOf } from '../scripts/gen-types.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

describe('OpenAPI documents', () => {
  it('pass the Redocly linter (recommended rules) with no error and no warning', async () => {
    const { stdout } = await promisify(execFile)('node_modules/.bin/redocly', ['lint', '--format=json'], {
      cwd: root,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    });
    const totals = [...stdout.matchAll(/"errors": (\d+),\s*"warnings": (\d+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
    assert.deepEqual(totals, [
      [0, 0],
      [0, 0],
    ]);
  });

  // One committed copy of each, read by the SDK and the services alike (scripts/gen-types.ts says why there).
  for (const service of SERVICES) {
    it(`the TypeScript types of ${service} are generated from its current document`, async () => {
      const committed = readFileSync(typesFileOf(service), 'utf8');
      assert.ok(committed === (await typesOf(service)), `run \`pnpm gen:types\`: packages/client/src/generated/${service}.ts is stale`);
    });
  }
});
