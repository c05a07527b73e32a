import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';

const root = fileURLToPath(new URL('..', import.meta.url));
const services = ['identity', 'risk'];

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

  for (const service of services) {
    it(`the TypeScript types of ${service} are generated from its current document`, async () => {
      const spec = new URL(`../services/${service}/openapi.yaml`, import.meta.url);
      const generated = astToString(await openapiTS(spec));
      const committed = readFileSync(new URL(`../services/${service}/src/generated/openapi.ts`, import.meta.url), 'utf8');
      assert.ok(committed.endsWith(generated), `run \`pnpm gen:types\`: services/${service}/src/generated/openapi.ts is stale`);
    });
  }
});
