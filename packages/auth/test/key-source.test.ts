import assert from 'node:assert/strict';
import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ServiceUnavailableError, UnauthorizedError } from '@platform/errors';
import jwt from 'jsonwebtoken';
import { type Jwks, jwksKeySource, keysFromJwks, publicJwks, staticKeySource } from '../src/key-source.ts';
import { createTokenVerifier } from '../src/verifier.ts';
import { type TestIssuer, createTestIssuer } from '../src/testing/index.ts';

/** A local JWKS endpoint whose answer the test decides per request. */
interface JwksServer {
  url: string;
  requests: () => number;
  close: () => Promise<void>;
}

async function startServer(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<JwksServer> {
  let requests = 0;
  const server = createServer((req, res) => {
    requests += 1;
    handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Serves whatever `current()` returns at the time of each request. */
function serveJson(current: () => unknown): (req: IncomingMessage, res: ServerResponse) => void {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(current()));
  };
}

/** The If-None-Match of each request a server received, in order (undefined: an unconditional request). */
type Conditions = Array<string | undefined>;

/**
 * Serves `current()` as identity does: with an ETag over the body, and 304 without a body to an
 * If-None-Match that names it. Records each request's If-None-Match in `seen`.
 */
function serveWithEtag(current: () => unknown, seen: Conditions): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const body = JSON.stringify(current());
    const etag = `"${createHash('sha256').update(body).digest('base64url')}"`;
    const condition = req.headers['if-none-match'];
    seen.push(condition);
    if (condition === etag) res.writeHead(304, { etag }).end();
    else res.writeHead(200, { 'content-type': 'application/json', etag }).end(body);
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `check()` holds, or fails after `withinMs`. */
async function eventually(check: () => boolean | Promise<boolean>, withinMs: number, what: string): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `${what} within ${withinMs} ms`);
    await sleep(10);
  }
}

/** A URL where nothing listens: a server is started for its port and closed again. */
async function deadUrl(): Promise<string> {
  const server = await startServer(() => undefined);
  await server.close();
  return server.url;
}

/** Replaces Date.now for the rate-limit tests; returns the restore function. The fetches still run for real. */
function freezeClock(start: number): { advance: (ms: number) => void; restore: () => void } {
  const realNow = Date.now;
  let current = start;
  Date.now = () => current;
  return {
    advance: (ms) => {
      current += ms;
    },
    restore: () => {
      Date.now = realNow;
    },
  };
}

function verifierOver(source: ReturnType<typeof jwksKeySource>, issuer: TestIssuer) {
  return createTokenVerifier({ keys: source, issuer: issuer.issuer, audience: issuer.audience });
}

async function assertUnavailable(promise: Promise<unknown>): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof ServiceUnavailableError, `expected ServiceUnavailableError, got ${String(err)}`);
    assert.equal(err.status, 503);
    return true;
  });
}

describe('jwksKeySource', () => {
  it('when two tokens are verified, fetches the JWKS once', async () => {
    const issuer = createTestIssuer();
    const server = await issuer.serveJwks();
    try {
      const verifier = verifierOver(jwksKeySource({ url: server.url }), issuer);
      const first = await verifier.verify(issuer.sign({ username: 'one@example.com' }));
      const second = await verifier.verify(issuer.sign({ username: 'two@example.com' }));
      assert.equal(first.username, 'one@example.com');
      assert.equal(second.username, 'two@example.com');
      assert.equal(server.requests(), 1);
    } finally {
      await server.close();
    }
  });

  it('when the first calls come at once, fetches the JWKS once', async () => {
    const issuer = createTestIssuer();
    const server = await issuer.serveJwks();
    try {
      const source = jwksKeySource({ url: server.url });
      const keys = await Promise.all([source.get(issuer.kid), source.get(issuer.kid), source.get(issuer.kid), source.get('other')]);
      assert.equal(keys.filter((k) => k !== undefined).length, 3);
      assert.equal(keys[3], undefined);
      assert.equal(server.requests(), 1);
    } finally {
      await server.close();
    }
  });

  it('when a kid is unknown, fetches again, but not for a second unknown kid within minRefreshIntervalMs', async () => {
    const issuer = createTestIssuer();
    const server = await issuer.serveJwks();
    const clock = freezeClock(Date.now());
    try {
      const source = jwksKeySource({ url: server.url, minRefreshIntervalMs: 10_000 });
      assert.notEqual(await source.get(issuer.kid), undefined);
      assert.equal(server.requests(), 1);

      clock.advance(9_999);
      assert.equal(await source.get('unknown-1'), undefined);
      assert.equal(server.requests(), 1, 'no fetch within the interval of the first one');

      clock.advance(1);
      assert.equal(await source.get('unknown-2'), undefined);
      assert.equal(server.requests(), 2, 'an unknown kid after the interval fetches again');

      clock.advance(5_000);
      assert.equal(await source.get('unknown-3'), undefined);
      assert.equal(server.requests(), 2, 'a second unknown kid within the interval does not');
    } finally {
      clock.restore();
      await server.close();
    }
  });

  it('when the issuer rotates its key, accepts a token with the new kid after one refetch', async () => {
    const oldIssuer = createTestIssuer();
    const newIssuer = createTestIssuer(oldIssuer.issuer, oldIssuer.audience);
    let served: Jwks = oldIssuer.jwks;
    const server = await startServer(serveJson(() => served));
    try {
      const verifier = verifierOver(jwksKeySource({ url: server.url, minRefreshIntervalMs: 0 }), oldIssuer);
      assert.equal((await verifier.verify(oldIssuer.sign({ username: 'old@example.com' }))).username, 'old@example.com');

      served = { keys: [...oldIssuer.jwks.keys, ...newIssuer.jwks.keys] };
      assert.equal((await verifier.verify(newIssuer.sign({ username: 'new@example.com' }))).username, 'new@example.com');
      assert.equal(server.requests(), 2);
      assert.equal((await verifier.verify(oldIssuer.sign({ username: 'old@example.com' }))).username, 'old@example.com');
      assert.equal(server.requests(), 2);
    } finally {
      await server.close();
    }
  });

  it('when two tokens with the new kid arrive together after a rotation, accepts both with one refetch', async () => {
    const oldIssuer = createTestIssuer();
    const newIssuer = createTestIssuer(oldIssuer.issuer, oldIssuer.audience);
    let served: Jwks = oldIssuer.jwks;
    const server = await startServer(serveJson(() => served));
    const clock = freezeClock(Date.now());
    try {
      const source = jwksKeySource({ url: server.url, minRefreshIntervalMs: 10_000 });
      assert.notEqual(await source.get(oldIssuer.kid), undefined);
      served = { keys: [...oldIssuer.jwks.keys, ...newIssuer.jwks.keys] };
      clock.advance(10_000);

      const [a, b] = await Promise.all([source.get(newIssuer.kid), source.get(newIssuer.kid)]);
      assert.notEqual(a, undefined);
      assert.notEqual(b, undefined);
      assert.equal(server.requests(), 2);
    } finally {
      clock.restore();
      await server.close();
    }
  });

  it('when the issuer drops a key, rejects its tokens with 401 after the refetch', async () => {
    const oldIssuer = createTestIssuer();
    const newIssuer = createTestIssuer(oldIssuer.issuer, oldIssuer.audience);
    let served: Jwks = oldIssuer.jwks;
    const server = await startServer(serveJson(() => served));
    try {
      const verifier = verifierOver(jwksKeySource({ url: server.url, minRefreshIntervalMs: 0 }), oldIssuer);
      await verifier.verify(oldIssuer.sign());
      served = newIssuer.jwks;
      await verifier.verify(newIssuer.sign());
      await assert.rejects(verifier.verify(oldIssuer.sign()), UnauthorizedError);
    } finally {
      await server.close();
    }
  });

  it('when the endpoint is down at first use, rejects with 503 and reports the fault', async () => {
    const errors: unknown[] = [];
    const source = jwksKeySource({ url: await deadUrl(), onError: (err) => errors.push(err) });
    await assertUnavailable(source.get('any'));
    assert.equal(errors.length, 1);
    assert.ok(errors[0] instanceof Error);
  });

  it('when the endpoint answers 500 at first use, rejects a verification with 503', async () => {
    const issuer = createTestIssuer();
    const errors: unknown[] = [];
    const server = await startServer((_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' }).end('boom');
    });
    try {
      const verifier = verifierOver(jwksKeySource({ url: server.url, onError: (err) => errors.push(err) }), issuer);
      await assertUnavailable(verifier.verify(issuer.sign()));
      assert.match(String(errors[0]), /answered 500/);
    } finally {
      await server.close();
    }
  });

  it('when the endpoint goes down after a successful fetch, keeps verifying with the cached keys', async () => {
    const issuer = createTestIssuer();
    let up = true;
    const server = await startServer((req, res) => {
      if (up) serveJson(() => issuer.jwks)(req, res);
      else res.writeHead(503).end();
    });
    let failed: () => void = () => undefined;
    const backgroundFailure = new Promise<void>((resolve) => {
      failed = resolve;
    });
    try {
      // maxAgeMs 0: every use starts a background refresh, which now fails.
      const source = jwksKeySource({ url: server.url, maxAgeMs: 0, minRefreshIntervalMs: 0, onError: () => failed() });
      const verifier = verifierOver(source, issuer);
      await verifier.verify(issuer.sign());
      up = false;
      assert.equal((await verifier.verify(issuer.sign({ username: 'still@example.com' }))).username, 'still@example.com');
      await backgroundFailure;
      assert.equal((await verifier.verify(issuer.sign({ username: 'after@example.com' }))).username, 'after@example.com');
      assert.ok(server.requests() >= 2);
      // An unknown kid's refetch fails too: no key (a 401 for that token), not a 503, since keys are known.
      assert.equal(await source.get('unknown'), undefined);
    } finally {
      await server.close();
    }
  });

  it('when the endpoint answers something that is not a key set after a good fetch, keeps the cached keys', async () => {
    const issuer = createTestIssuer();
    let served: unknown = issuer.jwks;
    const errors: unknown[] = [];
    const server = await startServer(serveJson(() => served));
    try {
      const source = jwksKeySource({ url: server.url, minRefreshIntervalMs: 0, onError: (err) => errors.push(err) });
      assert.notEqual(await source.get(issuer.kid), undefined);
      served = { error: 'maintenance' };
      assert.equal(await source.get('unknown'), undefined);
      assert.equal(server.requests(), 2);
      assert.equal(errors.length, 1);
      assert.notEqual(await source.get(issuer.kid), undefined, 'the cached key survived the bad answer');
    } finally {
      await server.close();
    }
  });

  it('when some JWKS entries are malformed, skips them and uses the good ones', async () => {
    const issuer = createTestIssuer();
    const good = issuer.jwks.keys[0]!;
    const served = {
      keys: [
        { kid: 'bad-ec', kty: 'EC', crv: 'P-256', x: 'AAAA', y: 'AAAA' },
        { kid: 'bad-rsa', kty: 'RSA', n: 'x' },
        { kid: 'symmetric', kty: 'oct', k: 'c2VjcmV0' },
        { ...good, kid: undefined },
        'not an object',
        good,
      ],
    };
    const server = await startServer(serveJson(() => served));
    try {
      const source = jwksKeySource({ url: server.url });
      const verifier = verifierOver(source, issuer);
      assert.equal((await verifier.verify(issuer.sign({ username: 'good@example.com' }))).username, 'good@example.com');
      assert.equal(await source.get('bad-ec'), undefined);
      assert.equal(await source.get('bad-rsa'), undefined);
      assert.equal(await source.get('symmetric'), undefined);
    } finally {
      await server.close();
    }
  });

  it('when the endpoint never answers, rejects with 503 once timeoutMs has passed', async () => {
    const held: ServerResponse[] = [];
    const server = await startServer((_req, res) => {
      held.push(res);
    });
    const errors: unknown[] = [];
    try {
      const source = jwksKeySource({ url: server.url, timeoutMs: 200, onError: (err) => errors.push(err) });
      const started = performance.now();
      await assertUnavailable(source.get('any'));
      const elapsed = performance.now() - started;
      assert.ok(elapsed < 5000, `took ${Math.round(elapsed)} ms`);
      assert.equal((errors[0] as Error).name, 'TimeoutError');
      assert.equal(held.length, 1);
    } finally {
      await server.close();
    }
  });
});

describe('jwksKeySource with refreshIntervalMs (background re-validation)', () => {
  it('re-validates with If-None-Match; while nothing changed each check is a 304 and the key objects stay the same', async () => {
    const issuer = createTestIssuer();
    const seen: Conditions = [];
    const server = await startServer(serveWithEtag(() => issuer.jwks, seen));
    const source = jwksKeySource({ url: server.url, refreshIntervalMs: 30 });
    try {
      const key = await source.get(issuer.kid);
      assert.notEqual(key, undefined);
      await eventually(() => seen.length >= 4, 2000, 'three background checks');
      assert.equal(seen[0], undefined, 'the first fetch is unconditional');
      const etag = `"${createHash('sha256').update(JSON.stringify(issuer.jwks)).digest('base64url')}"`;
      assert.deepEqual(new Set(seen.slice(1)), new Set([etag]), 'every later one names the ETag it holds');
      assert.equal(await source.get(issuer.kid), key, 'the very key object');
    } finally {
      source.close();
      await server.close();
    }
  });

  it('when the issuer stops publishing a key, answers undefined for it within about one interval, and its remembered tokens are refused', async () => {
    const kept = createTestIssuer();
    const dropped = createTestIssuer(kept.issuer, kept.audience);
    let served: Jwks = { keys: [...kept.jwks.keys, ...dropped.jwks.keys] };
    const server = await startServer(serveWithEtag(() => served, []));
    const source = jwksKeySource({ url: server.url, refreshIntervalMs: 50 });
    try {
      const verifier = verifierOver(source, kept);
      const keptToken = kept.sign({ username: 'kept@example.com' });
      const droppedToken = dropped.sign({ username: 'dropped@example.com' });
      // Both verified once, so both are remembered by the verifier: only the key source can stop the second.
      await verifier.verify(keptToken);
      await verifier.verify(droppedToken);
      const keptKey = await source.get(kept.kid);

      served = kept.jwks;
      await eventually(async () => (await source.get(dropped.kid)) === undefined, 1000, 'the withdrawn key gone');
      await assert.rejects(verifier.verify(droppedToken), UnauthorizedError);
      assert.equal(await source.get(kept.kid), keptKey, 'the unchanged key is the same object, so its remembered tokens stay remembered');
      assert.equal((await verifier.verify(keptToken)).username, 'kept@example.com');
    } finally {
      source.close();
      await server.close();
    }
  });

  it('learns a key the issuer adds within about one interval, before any token names it', async () => {
    const current = createTestIssuer();
    const next = createTestIssuer(current.issuer, current.audience);
    let served: Jwks = current.jwks;
    const server = await startServer(serveWithEtag(() => served, []));
    // No refetch for an unknown kid for a minute: only the background check can bring the new key.
    const source = jwksKeySource({ url: server.url, refreshIntervalMs: 50, minRefreshIntervalMs: 60_000 });
    try {
      assert.notEqual(await source.get(current.kid), undefined);
      served = { keys: [...current.jwks.keys, ...next.jwks.keys] };
      await eventually(async () => (await source.get(next.kid)) !== undefined, 1000, 'the added key known');
    } finally {
      source.close();
      await server.close();
    }
  });

  it('does not check before the first use, and stops checking at close()', async () => {
    const issuer = createTestIssuer();
    const server = await startServer(serveWithEtag(() => issuer.jwks, []));
    const source = jwksKeySource({ url: server.url, refreshIntervalMs: 20 });
    try {
      await sleep(100);
      assert.equal(server.requests(), 0, 'a verifier that never met a token asks nothing');
      await source.get(issuer.kid);
      await eventually(() => server.requests() >= 3, 1000, 'background checks');
      source.close();
      await sleep(50);
      const after = server.requests();
      await sleep(150);
      assert.equal(server.requests(), after, 'no check after close()');
    } finally {
      source.close();
      await server.close();
    }
  });

  it('never makes a request wait for a background check, however slow', async () => {
    const issuer = createTestIssuer();
    const held: ServerResponse[] = [];
    const server = await startServer((req, res) => {
      // The first fetch is answered; every check hangs.
      if (req.headers['if-none-match'] === undefined) serveWithEtag(() => issuer.jwks, [])(req, res);
      else held.push(res);
    });
    const source = jwksKeySource({ url: server.url, refreshIntervalMs: 20, timeoutMs: 5000 });
    try {
      const verifier = verifierOver(source, issuer);
      await verifier.verify(issuer.sign());
      await eventually(() => held.length === 1, 1000, 'a check in flight');
      const started = performance.now();
      await verifier.verify(issuer.sign({ username: 'other@example.com' }));
      // The check is held for its whole timeout (5 s): a verification that waited for it would take that long.
      assert.ok(performance.now() - started < 1000, `a verification waited ${Math.round(performance.now() - started)} ms`);
      assert.equal(held.length, 1, 'one check at a time');
    } finally {
      source.close();
      await server.close();
    }
  });

  it('when the issuer is down or answers something that is not a key set, keeps the keys, and reports each run of failures once', async () => {
    const issuer = createTestIssuer();
    let mode: 'up' | 'down' | 'garbage' = 'up';
    const server = await startServer((req, res) => {
      if (mode === 'up') serveWithEtag(() => issuer.jwks, [])(req, res);
      else if (mode === 'down') res.writeHead(503).end();
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"error":"maintenance"}');
    });
    const errors: unknown[] = [];
    const source = jwksKeySource({ url: server.url, refreshIntervalMs: 20, onError: (err) => errors.push(err) });
    try {
      const verifier = verifierOver(source, issuer);
      const key = await source.get(issuer.kid);
      mode = 'down';
      let at = server.requests();
      await eventually(() => server.requests() >= at + 5, 2000, 'five failed checks');
      assert.equal(errors.length, 1, 'one report for the run');
      assert.match(String(errors[0]), /answered 503/);
      assert.equal(await source.get(issuer.kid), key);
      assert.equal((await verifier.verify(issuer.sign({ username: 'still@example.com' }))).username, 'still@example.com');

      mode = 'up';
      at = server.requests();
      await eventually(() => server.requests() >= at + 2, 2000, 'checks succeed again');
      mode = 'garbage';
      at = server.requests();
      await eventually(() => server.requests() >= at + 5, 2000, 'five checks answered with something else');
      assert.equal(errors.length, 2, 'a new run, reported once');
      assert.match(String(errors[1]), /not a key set/);
      assert.equal(await source.get(issuer.kid), key, 'not wiped');
    } finally {
      source.close();
      await server.close();
    }
  });
});

describe('keysFromJwks', () => {
  it('keeps the key object of `previous` for a kid whose key did not change, and makes a new one for a kid whose key did', () => {
    const a = createTestIssuer();
    const b = createTestIssuer();
    const previous = keysFromJwks({ keys: [...a.jwks.keys, ...b.jwks.keys] });
    const other = createTestIssuer();
    // Same kid as b, other key material: an issuer that reused a kid must not keep the old key's tokens alive.
    const next = keysFromJwks({ keys: [...a.jwks.keys, { ...other.jwks.keys[0]!, kid: b.kid }] }, previous);
    assert.equal(next.get(a.kid), previous.get(a.kid));
    assert.notEqual(next.get(b.kid), previous.get(b.kid));
    assert.ok(next.get(b.kid)?.equals(createPublicKey(other.privateKey)));
  });


  it('when an entry carries a private key, keeps only its public half', () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const keys = keysFromJwks({ keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'k1' }] });
    assert.equal(keys.get('k1')?.type, 'public');
  });

  it('when keys is not an array, answers no keys', () => {
    assert.equal(keysFromJwks({ keys: null } as unknown as Jwks).size, 0);
  });

  it('when an RSA entry is well formed, answers an RSA public key under its kid', () => {
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const keys = keysFromJwks({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'r1' }] });
    assert.deepEqual([...keys.keys()], ['r1']);
    assert.equal(keys.get('r1')?.asymmetricKeyType, 'rsa');
  });
});

describe('staticKeySource', () => {
  it('answers the key of a known kid and undefined for any other', async () => {
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const source = staticKeySource(new Map([['k1', publicKey]]));
    assert.equal(await source.get('k1'), publicKey);
    assert.equal(await source.get('k2'), undefined);
  });
});

describe('jwksKeySource current() (what the gateway publishes)', () => {
  it('answers every key held, by kid, in the issuer\'s order; first calls at once fetch the JWKS once, later ones not again', async () => {
    const first = createTestIssuer();
    const second = createTestIssuer(first.issuer, first.audience);
    const server = await startServer(serveJson(() => ({ keys: [...first.jwks.keys, ...second.jwks.keys] })));
    try {
      const source = jwksKeySource({ url: server.url });
      const [a, b, key] = await Promise.all([source.current(), source.current(), source.get(first.kid)]);
      assert.deepEqual([...a.keys()], [first.kid, second.kid]);
      assert.equal(a, b);
      assert.equal(a.get(first.kid), key, 'the very key objects `get` answers');
      await source.current();
      assert.equal(server.requests(), 1);
    } finally {
      await server.close();
    }
  });

  it('when the endpoint is down at first use, rejects with 503, and fetches again at the next call', async () => {
    const issuer = createTestIssuer();
    let up = false;
    const server = await startServer((req, res) => {
      if (up) serveJson(() => issuer.jwks)(req, res);
      else res.writeHead(503).end();
    });
    try {
      const source = jwksKeySource({ url: server.url, minRefreshIntervalMs: 60_000 });
      await assertUnavailable(source.current());
      up = true;
      assert.deepEqual([...(await source.current()).keys()], [issuer.kid]);
      assert.equal(server.requests(), 2);
    } finally {
      await server.close();
    }
  });

  it('starts the background checks: a key the issuer withdraws is gone within about one interval; an answer already given is left as it was', async () => {
    const kept = createTestIssuer();
    const dropped = createTestIssuer(kept.issuer, kept.audience);
    let served: Jwks = { keys: [...kept.jwks.keys, ...dropped.jwks.keys] };
    const server = await startServer(serveWithEtag(() => served, []));
    const source = jwksKeySource({ url: server.url, refreshIntervalMs: 50 });
    try {
      const before = await source.current();
      served = kept.jwks;
      await eventually(async () => !(await source.current()).has(dropped.kid), 1000, 'the withdrawn key gone');
      assert.deepEqual([...(await source.current()).keys()], [kept.kid]);
      assert.deepEqual([...before.keys()], [kept.kid, dropped.kid]);
    } finally {
      source.close();
      await server.close();
    }
  });
});

describe('publicJwks', () => {
  it('publishes each key\'s public half with its kid, its algorithm and use sig, in order, and reads back as the same keys', () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    // Private keys given: only their public halves may come out.
    const jwks = publicJwks(new Map([['e1', ec.privateKey], ['r1', rsa.privateKey]]));
    assert.deepEqual(
      jwks.keys.map(({ kid, alg, use, kty }) => ({ kid, alg, use, kty })),
      [
        { kid: 'e1', alg: 'ES256', use: 'sig', kty: 'EC' },
        { kid: 'r1', alg: 'RS256', use: 'sig', kty: 'RSA' },
      ],
    );
    for (const jwk of jwks.keys) for (const part of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k']) assert.equal(part in jwk, false, `${String(jwk.kid)} carries ${part}`);
    const read = keysFromJwks(jwks);
    assert.ok(read.get('e1')?.equals(ec.publicKey));
    assert.ok(read.get('r1')?.equals(rsa.publicKey));
  });

  it('verifies what the issuer signed: a token checks out with the published key', () => {
    const issuer = createTestIssuer();
    const [jwk] = publicJwks(new Map([[issuer.kid, createPublicKey(issuer.privateKey)]])).keys;
    const claims = jwt.verify(issuer.sign({ username: 'pub@example.com' }), createPublicKey({ key: jwk!, format: 'jwk' }), { algorithms: ['ES256'] });
    assert.equal((claims as jwt.JwtPayload).username, 'pub@example.com');
  });

  it('leaves out a key no verifier accepts: RSA under 2048 bits, another curve, Ed25519', () => {
    const keys = new Map([
      ['small-rsa', generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey],
      ['p384', generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey],
      ['ed', generateKeyPairSync('ed25519').publicKey],
      ['good', generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey],
    ]);
    assert.deepEqual(
      publicJwks(keys).keys.map((jwk) => jwk.kid),
      ['good'],
    );
  });
});
