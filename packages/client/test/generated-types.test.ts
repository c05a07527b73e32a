import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import openapiTS, { astToString } from 'openapi-typescript';

// Same options as the package's `gen:types` script: request fields with a default stay optional.
for (const service of ['identity', 'risk']) {
  describe(`@platform/client generated types of ${service}`, () => {
    it('are generated from the current services/' + service + '/openapi.yaml', async () => {
      const spec = new URL(`../../../services/${service}/openapi.yaml`, import.meta.url);
      const generated = astToString(await openapiTS(spec, { defaultNonNullable: false }));
      const committed = readFileSync(new URL(`../src/generated/${service}.ts`, import.meta.url), 'utf8');
      assert.ok(committed.endsWith(generated), `run \`pnpm gen:types\`: packages/client/src/generated/${service}.ts is stale`);
    });
  });
}
