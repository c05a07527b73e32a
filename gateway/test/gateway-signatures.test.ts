import assert from 'node:assert/strict';
import { type TestRedis, createTestRedis } from '@platform/service-kit/testing';
import { type TestGateway, send, startGateway, testKeys } from './support/gateway-harness.ts';
import { digestOf, newIdempotencyKey, newNonce, signatureHeaders, signedHeaders } from './support/signing-client.ts';

describe('gateway request signatures (CONTRACT.md part 2)', () => {
  let testRedis: TestRedis;
  let gw: TestGateway;
  let token: string;

  before(async () => {
    testRedis = await createTestRedis('gw-sig');
    gw = await startGateway({ redis: testRedis.redis });
    token = gw.issuer.sign();
  });
  after(async () => {
    await gw.close();
    await testRedis.close();
  });

  /** Sends and expects a 401 `Invalid request signature` that never reached an upstream, with `reason` logged. */
  async function expectRejected(method: string, target: string, headers: Record<string, string>, body: Buffer | undefined, reason: string | RegExp): Promise<void> {
    const before = gw.identity.received.length + gw.risk.received.length;
    const res = await send(gw.url, method, target, headers, body);
    assert.equal(res.status, 401, res.body.toString());
    const json = res.json();
    // Station error bodies carry `messages`, the gateway's own too (CONTRACT.md part 7).
    const messages = target.startsWith('/v1/weather-stations/') ? { messages: ['Invalid request signature'] } : {};
    assert.deepEqual(json, { timestamp: json.timestamp, status: 401, error: 'Unauthorized', message: 'Invalid request signature', ...messages, path: target });
    assert.equal(gw.identity.received.length + gw.risk.received.length, before, 'a rejected request reached an upstream');
    const line = gw.logs.lines().findLast((l) => l.msg === 'request signature rejected');
    assert.ok(line, 'no rejection logged');
    assert.equal(line.level, 'warn');
    if (typeof reason === 'string') assert.equal(line.reason, reason);
    else assert.match(String(line.reason), reason);
  }

  describe('GET /v1/weather-stations/**', () => {
    it('when signed with hmac-sha256 and no query, proxies it and answers the upstream 200', async () => {
      const target = '/v1/weather-stations/get-cities';
      const res = await send(gw.url, 'GET', target, signedHeaders('GET', target, { key: gw.keys.hmac, bearer: token }));
      assert.equal(res.status, 200, res.body.toString());
      assert.deepEqual(res.json(), { path: target, method: 'GET' });
      assert.equal(gw.risk.received.at(-1)?.url, target);
    });

    it('when signed with ed25519 over a query, proxies it with the query unchanged', async () => {
      const target = '/v1/weather-stations/nearest?latitude=41.01&longitude=28.97&limit=3';
      const res = await send(gw.url, 'GET', target, signedHeaders('GET', target, { key: gw.keys.ed25519, bearer: token, alg: 'ed25519' }));
      assert.equal(res.status, 200, res.body.toString());
      assert.equal(gw.risk.received.at(-1)?.url, target);
    });

    it('when the query was changed after signing, answers 401', async () => {
      const headers = signedHeaders('GET', '/v1/weather-stations/nearest?limit=3', { key: gw.keys.hmac, bearer: token });
      await expectRejected('GET', '/v1/weather-stations/nearest?limit=300', headers, undefined, 'signature does not match');
    });
  });

  describe('POST /v1/auth/login', () => {
    const target = '/v1/auth/login';
    const body = Buffer.from(JSON.stringify({ username: 'ayşe@example.com', password: 'pässword' }));

    it('when signed with a body and its digest, forwards exactly those bytes', async () => {
      for (const key of [gw.keys.hmac, gw.keys.ed25519]) {
        const res = await send(gw.url, 'POST', target, signedHeaders('POST', target, { key, body }), body);
        assert.equal(res.status, 200, res.body.toString());
        assert.ok(gw.identity.received.at(-1)?.body.equals(body));
      }
    });

    it('when the Signature headers are missing, answers 401', async () => {
      const headers = signedHeaders('POST', target, { key: gw.keys.hmac, body });
      const { signature: _s, ...noSignature } = headers;
      await expectRejected('POST', target, noSignature, body, 'Signature header missing');
      const { 'signature-input': _i, ...noInput } = headers;
      await expectRejected('POST', target, noInput, body, 'Signature-Input header missing');
    });

    it('when the label is not sig1, answers 401', async () => {
      await expectRejected('POST', target, signedHeaders('POST', target, { key: gw.keys.hmac, body, label: 'sig2' }), body, 'Signature-Input has no sig1');
    });

    it('when the keyid is unknown, answers 401', async () => {
      const stranger = { keyId: 'stranger', alg: 'hmac-sha256' as const, secret: 'stranger-secret-0123456789' };
      await expectRejected('POST', target, signedHeaders('POST', target, { key: stranger, body }), body, 'unknown keyid "stranger"');
    });

    it('when signed with the wrong secret or the wrong private key, answers 401', async () => {
      const wrong = { keyId: gw.keys.hmac.keyId, alg: 'hmac-sha256' as const, secret: 'not-the-secret-0123456789' };
      await expectRejected('POST', target, signedHeaders('POST', target, { key: gw.keys.hmac, signWith: wrong, body }), body, 'signature does not match');
      const other = testKeys().ed25519;
      await expectRejected('POST', target, signedHeaders('POST', target, { key: gw.keys.ed25519, signWith: other, body }), body, 'signature does not match');
    });

    it('when the body was tampered with after signing, answers 401', async () => {
      const headers = signedHeaders('POST', target, { key: gw.keys.hmac, body });
      const tampered = Buffer.from(body.toString().replace('ayşe', 'ayse'));
      await expectRejected('POST', target, headers, tampered, 'Content-Digest does not match the body');
    });

    it('when the digest is re-computed for a tampered body, answers 401 (the digest is signed)', async () => {
      const headers = signedHeaders('POST', target, { key: gw.keys.hmac, body });
      const tampered = Buffer.from('{"username":"admin@example.com","password":"x"}');
      await expectRejected('POST', target, { ...headers, 'content-digest': digestOf(tampered) }, tampered, 'signature does not match');
    });

    it('when the body has no Content-Digest or the signature does not cover it, answers 401', async () => {
      const headers = signedHeaders('POST', target, { key: gw.keys.hmac, body });
      const { 'content-digest': _d, ...noDigest } = headers;
      await expectRejected('POST', target, noDigest, body, 'Content-Digest header missing');
      const uncovered = signedHeaders('POST', target, { key: gw.keys.hmac, body, components: ['@method', '@path', '@query', 'x-idempotency-key'] });
      await expectRejected('POST', target, uncovered, body, 'required component not covered: content-digest');
    });

    it('when created is too old or in the future, answers 401', async () => {
      const now = Math.floor(Date.now() / 1000);
      await expectRejected('POST', target, signedHeaders('POST', target, { key: gw.keys.hmac, body, created: now - 400 }), body, /^created is 40\d s old$/);
      await expectRejected('POST', target, signedHeaders('POST', target, { key: gw.keys.hmac, body, created: now + 400 }), body, /^created is (39\d|400) s in the future$/);
    });

    it('when created is rewritten as a decimal after signing (N.0, the same number), answers 401', async () => {
      const headers = signedHeaders('POST', target, { key: gw.keys.hmac, body });
      const input = String(headers['signature-input']).replace(/created=([0-9]+)/, 'created=$1.0');
      assert.match(input, /created=[0-9]+\.0;/);
      await expectRejected('POST', target, { ...headers, 'signature-input': input }, body, /^Signature-Input holds the decimal [0-9]+\.0, which is read back as an integer$/);
    });

    it('when expires is past, answers 401', async () => {
      const now = Math.floor(Date.now() / 1000);
      await expectRejected('POST', target, signedHeaders('POST', target, { key: gw.keys.hmac, body, expires: now - 5 }), body, /^signature expired \d s ago$/);
    });

    it('when a required component is not covered, answers 401 naming it in the log', async () => {
      for (const missing of ['@method', '@path', '@query', 'x-idempotency-key']) {
        const components = ['@method', '@path', '@query', 'x-idempotency-key', 'content-digest'].filter((c) => c !== missing);
        await expectRejected('POST', target, signedHeaders('POST', target, { key: gw.keys.hmac, body, components }), body, `required component not covered: ${missing}`);
      }
    });

    it('when an Authorization header is sent but not covered, answers 401', async () => {
      const headers = signedHeaders('POST', target, { key: gw.keys.hmac, body, components: ['@method', '@path', '@query', 'x-idempotency-key', 'content-digest'] });
      await expectRejected('POST', target, { ...headers, authorization: `Bearer ${token}` }, body, 'required component not covered: authorization');
    });

    it('when alg does not match the key, answers 401', async () => {
      await expectRejected('POST', target, signedHeaders('POST', target, { key: gw.keys.hmac, body, alg: 'ed25519' }), body, 'alg "ed25519" is not the key\'s hmac-sha256');
      await expectRejected('POST', target, signedHeaders('POST', target, { key: gw.keys.ed25519, body, alg: 'hmac-sha256' }), body, 'alg "hmac-sha256" is not the key\'s ed25519');
      // The client's text is cut, as an unknown keyid is: the line names the fault, it does not store what was sent.
      const long = `x${'a'.repeat(499)}`;
      await expectRejected('POST', target, signedHeaders('POST', target, { key: gw.keys.hmac, body, alg: long as 'ed25519' }), body, `alg "${long.slice(0, 64)}" is not the key's hmac-sha256`);
    });

    it('when the nonce is malformed, answers 401', async () => {
      await expectRejected('POST', target, signedHeaders('POST', target, { key: gw.keys.hmac, body, nonce: 'too-short' }), body, 'nonce must be 16-128 characters of [A-Za-z0-9_-]');
    });

    it('when the signed idempotency key differs from the one sent, answers 401', async () => {
      const headers = signedHeaders('POST', target, { key: gw.keys.hmac, body });
      await expectRejected('POST', target, { ...headers, 'x-idempotency-key': newIdempotencyKey() }, body, 'signature does not match');
    });

    it('when the signature is made for another method or path, answers 401', async () => {
      const idem = newIdempotencyKey();
      const headers = { 'x-idempotency-key': idem, 'content-digest': digestOf(body), 'content-type': 'application/json' };
      const forRefresh = signatureHeaders({ method: 'POST', target: '/v1/auth/refresh', headers, body, key: gw.keys.hmac, nonce: newNonce() });
      await expectRejected('POST', target, { ...headers, ...forRefresh }, body, 'signature does not match');
    });
  });
});
