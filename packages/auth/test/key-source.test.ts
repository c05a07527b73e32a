import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ServiceUnavailableError, UnauthorizedError } from '@platform/errors';
import { type Jwks, jwksKeySource, keysFromJwks, staticKeySource } from '../src/key-source.ts';
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

describe('keysFromJwks', () => {
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
