import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type AddressInfo, type Socket, createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { Command, Redis } from 'ioredis';
import { startPrivateRedis } from '@platform/stack';
import { turnWrites } from '../src/redis.ts';
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

  describe('ioredis: the commands of one timeout share one timer', () => {
    /** Timers keeping the event loop alive: a command's own timer was one of them. */
    const liveTimers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const failure = (promise: Promise<unknown>) =>
      promise.then(
        () => assert.fail('answered'),
        (err: Error) => ({ message: err.message, at: performance.now() }),
      );
    /** A Redis that takes the connection and the commands and answers nothing, and a client of it with `commandTimeout`. */
    const silentRedis = async (commandTimeout: number) => {
      const sockets = new Set<Socket>();
      const silent = createServer((socket) => {
        sockets.add(socket);
        socket.resume();
      });
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const { port } = silent.address() as AddressInfo;
      const redis = new Redis({ host: '127.0.0.1', port, commandTimeout, enableReadyCheck: false, maxRetriesPerRequest: 0, lazyConnect: true });
      redis.on('error', () => undefined);
      const close = async () => {
        redis.disconnect();
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => silent.close(resolve));
      };
      return { redis, close };
    };

    it('500 commands in flight add no timer each, and are answered', async () => {
      const redis = new Redis(TEST_REDIS_URL, { commandTimeout: 5000, lazyConnect: true });
      try {
        await redis.connect();
        const before = liveTimers();
        const sent = Array.from({ length: 500 }, (_, i) => redis.echo(`c${i}`));
        // Unpatched, each of them holds a 5 s Timeout until its answer.
        assert.ok(liveTimers() <= before + 1, `${liveTimers() - before} timers for 500 commands`);
        assert.deepEqual(await Promise.all(sent), Array.from({ length: 500 }, (_, i) => `c${i}`));
      } finally {
        redis.disconnect();
      }
    });

    it('a server that never answers: each command is rejected at its own deadline, in the order sent, and not before it', async () => {
      const { redis, close } = await silentRedis(200);
      try {
        await redis.connect();
        const firstSent = performance.now();
        const firstA = failure(redis.get('a'));
        const firstB = failure(redis.get('b'));
        await new Promise((resolve) => setTimeout(resolve, 100));
        const laterSent = performance.now();
        const later = failure(redis.get('c'));
        const [a, b, c] = await Promise.all([firstA, firstB, later]);
        for (const { message } of [a, b, c]) assert.equal(message, 'Command timed out');
        for (const { at } of [a, b]) {
          assert.ok(at - firstSent >= 199, `rejected ${at - firstSent} ms after it was sent`);
          assert.ok(at - firstSent < 1000, `rejected ${at - firstSent} ms after it was sent`);
        }
        assert.ok(c.at - laterSent >= 199, `rejected ${c.at - laterSent} ms after it was sent`);
        assert.ok(c.at - laterSent < 1000, `rejected ${c.at - laterSent} ms after it was sent`);
        assert.ok(c.at > b.at, 'the later command was rejected first');
      } finally {
        await close();
      }
    });

    it('a client whose event loop was held past the timeout (a GC pause, the CPU taken away): what Redis answers meanwhile or right after is answered, what gets no answer is rejected', async () => {
      /** Holds this process's event loop, as a long GC pause or a starved CPU does, for `ms`. */
      const holdLoop = (ms: number) => {
        const until = performance.now() + ms;
        while (performance.now() < until);
      };
      const redis = new Redis(TEST_REDIS_URL, { commandTimeout: 500, lazyConnect: true });
      const { redis: unanswering, close } = await silentRedis(500);
      try {
        await Promise.all([redis.connect(), unanswering.connect()]);
        // In an immediate's turn, so that after the hold the loop's timers come first and its sockets after them,
        // as after a pause in any I/O callback (a hold in a timer's callback has the sockets read in that turn).
        await new Promise((resolve) => setImmediate(resolve));
        // Written at once (no auto-pipelining here): Redis answers during the hold, the answers wait unread.
        const answered = Array.from({ length: 5 }, (_, i) => redis.echo(`sent ${i}`));
        // Held back by the turn's cork, as the gateway holds its admission's commands (turnWrites): written only
        // after the hold, when their deadline has passed.
        turnWrites(redis)();
        const corked = Array.from({ length: 3 }, (_, i) => redis.echo(`corked ${i}`));
        const never = failure(unanswering.get('a'));
        holdLoop(800);
        const resumed = performance.now();
        // Unpatched, every one of these was "Command timed out"; rejected in the next immediate, the corked ones.
        assert.deepEqual(await Promise.all(answered), ['sent 0', 'sent 1', 'sent 2', 'sent 3', 'sent 4']);
        assert.deepEqual(await Promise.all(corked), ['corked 0', 'corked 1', 'corked 2']);
        const { message, at } = await never;
        assert.equal(message, 'Command timed out');
        assert.ok(at - resumed < 300, `rejected ${at - resumed} ms after the loop went on`);
      } finally {
        redis.disconnect();
        await close();
      }
    });

    it('a Redis held by a script: what was answered before stays answered, what waits past the timeout is rejected, and the client goes on', async () => {
      // A server of this test's own: the script holds every client of its server, and the test files running
      // beside this one (mocha's parallel jobs) share the test Redis (a login of theirs answered 503 in CI).
      const server = await startPrivateRedis();
      const redis = new Redis(server.url, { commandTimeout: 150, lazyConnect: true });
      const holder = new Redis(server.url, { lazyConnect: true });
      try {
        await Promise.all([redis.connect(), holder.connect()]);
        const answered = redis.echo('before');
        assert.equal(await answered, 'before');
        // Redis runs one script at a time and nothing beside it: a second of it holds every client (long
        // enough that a busy test machine's late timer still fires before the answer could come).
        const held = holder.eval("local t = redis.call('TIME'); local until_us = t[1] * 1000000 + t[2] + 1000000; repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] >= until_us; return 1", 0);
        await new Promise((resolve) => setTimeout(resolve, 50));
        const sent = performance.now();
        const waited = await failure(redis.echo('during'));
        assert.equal(waited.message, 'Command timed out');
        assert.ok(waited.at - sent >= 149 && waited.at - sent < 900, `rejected ${waited.at - sent} ms after it was sent`);
        assert.equal(await held, 1);
        assert.equal(await redis.echo('after'), 'after');
      } finally {
        redis.disconnect();
        holder.disconnect();
        await server.stop();
      }
    });
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
