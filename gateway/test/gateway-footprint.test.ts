import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Every package a fresh process loads when it imports `entry`, by name (`ioredis`, `@opentelemetry/api`):
 * a resolve hook records each module resolved, by `import` or `require`, before the first line runs.
 */
async function packagesLoadedBy(entry: URL): Promise<Set<string>> {
  const script = `
    import { registerHooks } from 'node:module';
    const urls = new Set();
    registerHooks({ resolve(specifier, context, next) { const resolved = next(specifier, context); urls.add(resolved.url); return resolved; } });
    await import(${JSON.stringify(entry.href)});
    process.stdout.write(JSON.stringify([...urls]));
  `;
  const { stdout } = await run(process.execPath, ['--conditions=development', '--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script], {
    // Tracing stays off, as in a process without OTEL_EXPORTER_OTLP_ENDPOINT.
    env: { PATH: process.env.PATH },
  });
  const names = new Set<string>();
  for (const url of JSON.parse(stdout) as string[]) {
    const name = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url.replace(/^.*\/node_modules\/\.pnpm\/[^/]+/, ''))?.[1];
    if (name !== undefined) names.add(name);
  }
  return names;
}

describe('gateway footprint', () => {
  // One child process for the tests below (each runs alone too): what the gateway's entry loads at start.
  let atStart: Promise<Set<string>> | undefined;
  const loadedAtStart = () => (atStart ??= packagesLoadedBy(new URL('../src/index.ts', import.meta.url)));

  it('loads no database driver and no OpenAPI validator: every module loaded stays in its heap for good', async () => {
    const loaded = await loadedAtStart();
    // What it does use, so that an empty list (a hook that saw nothing) cannot pass.
    for (const used of ['express', 'ioredis', 'pino', 'prom-client', 'jsonwebtoken', 'http-message-signatures']) {
      assert.ok(loaded.has(used), `the gateway loads ${used} (loaded: ${[...loaded].sort().join(', ')})`);
    }
    for (const unused of ['knex', 'pg', 'express-openapi-validator', 'ajv', '@apidevtools/json-schema-ref-parser', 'multer']) {
      assert.ok(!loaded.has(unused), `the gateway loads ${unused}, which it never uses`);
    }
  });

  it('loads the docs page\'s CommonMark renderer only when someone asks for the page', async () => {
    const loaded = await loadedAtStart();
    assert.ok(loaded.has('express'), `the hook saw the gateway's imports (loaded: ${[...loaded].sort().join(', ')})`);
    assert.ok(!loaded.has('markdown-it'), 'the gateway loads markdown-it at start');
  });
});
