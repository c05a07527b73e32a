import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Command, Redis } from 'ioredis';
import { TEST_REDIS_URL } from '../src/testing/index.ts';

// patches/ (package.json pnpm.patchedDependencies) carries measured hot-path fixes of dependencies
// (the bench diary, `git show f0a4e11:bench/README.md`, second pass). pnpm refuses to install when a patch no longer applies; these check
// that the fixes are in effect, so dropping an entry does not silently bring the cost back.
describe('patched dependencies', () => {
  it('ioredis: a pipeline has no accessor of its own (its length is one getter on the prototype)', () => {
    const redis = new Redis({ lazyConnect: true, enableOfflineQueue: false });
    try {
      const pipeline = redis.pipeline().set('a', '1').get('a');
      assert.equal(Object.getOwnPropertyDescriptor(pipeline, 'length'), undefined);
      assert.equal(pipeline.length, 2);
    } finally {
      redis.disconnect();
    }
  });

  it('ioredis: a command answered within its timeout keeps its timer field, set to undefined, not deleted (no dictionary mode)', async () => {
    const redis = new Redis(TEST_REDIS_URL, { commandTimeout: 5000, lazyConnect: true });
    try {
      await redis.connect();
      const timed = new Command('ping', [], { replyEncoding: 'utf8' });
      assert.equal(await redis.sendCommand(timed), 'PONG');
      // It had a timer (commandTimeout), and _clearTimers ended it on the answer.
      assert.ok(Object.hasOwn(timed, '_commandTimeoutTimer'), 'the timer field was deleted');
      assert.equal((timed as unknown as { _commandTimeoutTimer?: unknown })._commandTimeoutTimer, undefined);
    } finally {
      redis.disconnect();
    }
  });

  it('express-openapi-validator: routes laid out once (regexps compiled, keys found), url.parse only with a query, no promise hop once loaded, throws still reach next', () => {
    const dist = dirname(createRequire(import.meta.url).resolve('express-openapi-validator'));
    const read = (file: string) => readFileSync(join(dist, file), 'utf8');
    const metadata = read('middlewares/openapi.metadata.js');
    assert.match(metadata, /for \(const route of routeTable\(sensitive, strict\)\) \{\s+const matchedRoute = route\.regexp\.exec\(path\);/);
    assert.doesNotMatch(metadata, /pathToRegexp\)\(expressRoute, pathOpts\)/, 'a route regexp compiled per request');
    assert.match(read('middlewares/parsers/req.parameter.mutator.js'), /req\.originalUrl\.includes\('\?'\) \? url\.parse/);
    const validator = read('openapi.validator.js');
    assert.match(validator, /if \(reqmw\)\s+return runNow\(reqmw, req, res, next\);/);
    // Every middleware run outside the promise chain goes through runNow, which hands a throw to next.
    assert.match(validator, /const runNow = \(middleware, req, res, next\) => \{\s+try \{\s+return middleware\(req, res, next\);\s+\}\s+catch \(err\) \{\s+return next\(err\);/);
    for (const name of ['metamw', 'fumw', 'reqmw', 'resmw']) {
      assert.match(validator, new RegExp(`if \\(${name}\\)\\s+return runNow\\(${name}, req, res, next\\);`), `${name} runs without runNow`);
    }
    assert.match(validator, /scmw = scmw \|\| self\.securityMiddleware\(loaded\.context\.apiDoc\);\s+return runNow\(scmw, req, res, next\);/);
  });
});
