import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { LOGGED_QUERY_VALUES } from '@platform/service-kit';
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

  it('list every query parameter either among those whose values the log lines show or among those redacted on purpose', () => {
    // A search by username or free text is a person's data: its value stays out of the logs.
    const redacted = new Set(['username', 'q']);
    const named: string[] = [];
    for (const service of SERVICES) {
      const document = parse(readFileSync(`${root}services/${service}/openapi.yaml`, 'utf8')) as Record<string, unknown>;
      const refs = (document.components as { parameters?: Record<string, { name: string; in: string }> }).parameters ?? {};
      for (const item of Object.values(document.paths as Record<string, Record<string, { parameters?: Array<{ name?: string; in?: string; $ref?: string }> }>>)) {
        for (const operation of Object.values(item)) {
          for (const parameter of operation.parameters ?? []) {
            const resolved = parameter.$ref === undefined ? parameter : refs[parameter.$ref.split('/').pop() as string];
            if (resolved?.in === 'query') named.push(`${service}: ${resolved.name}`);
          }
        }
      }
    }
    assert.ok(named.length >= 10, named.join(', '));
    const undecided = named.filter((entry) => {
      const name = entry.split(': ')[1] as string;
      return !LOGGED_QUERY_VALUES.has(name) && !redacted.has(name);
    });
    assert.deepEqual(undecided, [], 'add each to LOGGED_QUERY_VALUES (service-kit, http-logger.ts) or to the redacted ones here');
    for (const name of redacted) assert.ok(!LOGGED_QUERY_VALUES.has(name), `${name} is logged`);
  });

  // One committed copy of each, read by the SDK and the services alike (scripts/gen-types.ts says why there).
  for (const service of SERVICES) {
    it(`the TypeScript types of ${service} are generated from its current document`, async () => {
      const committed = readFileSync(typesFileOf(service), 'utf8');
      assert.ok(committed === (await typesOf(service)), `run \`pnpm gen:types\`: packages/client/src/generated/${service}.ts is stale`);
    });
  }
});
