import assert from 'node:assert/strict';
import { type JsonWebKey, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { createTestIssuer } from '@platform/auth/testing';
import { type TestRedis, createTestRedis } from '@platform/service-kit/testing';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import * as oauth from 'oauth4webapi';
import { deadUrl, startUpstream } from './support/fake-upstream.ts';
import { type Answer, type TestGateway, send, startGateway } from './support/gateway-harness.ts';
import { signedHeaders } from './support/signing-client.ts';

const OPENID = '/.well-known/openid-configuration';
const OAUTH = '/.well-known/oauth-authorization-server';
const JWKS = '/.well-known/jwks.json';

type Jwk = JsonWebKey & { kid: string; alg: string; use: string };

/** Whether `token` (ES256) verifies with `jwk` alone, as any third party would check it: no library of ours. */
function verifiesWith(token: string, jwk: Jwk): boolean {
  const [header, payload, signature] = token.split('.');
  return verify('sha256', Buffer.from(`${header}.${payload}`), { key: createPublicKey({ key: jwk, format: 'jwk' }), dsaEncoding: 'ieee-p1363' }, Buffer.from(signature ?? '', 'base64url'));
}

/** The headers every discovery answer carries, a 304 too: public, cacheable for 5 minutes, a strong ETag. */
function assertCacheable(res: Answer, what: string): void {
  assert.equal(res.headers['cache-control'], 'public, max-age=300', what);
  assert.equal(res.headers['access-control-allow-origin'], '*', what);
  assert.match(String(res.headers.etag), /^"[A-Za-z0-9_-]{43}"$/, `${what}: a strong ETag`);
}

function assertErrorShape(res: Answer, status: number, error: string, path: string): void {
  assert.equal(res.status, status, res.body.toString());
  const body = res.json();
  assert.deepEqual(body, { timestamp: body.timestamp, status, error, message: body.message, path });
}

describe('gateway discovery, unsigned (CONTRACT.md part 16)', () => {
  let testRedis: TestRedis;
  let gw: TestGateway;
  const proxied = () => gw.identity.received.length + gw.risk.received.length;

  before(async () => {
    testRedis = await createTestRedis('gw-discovery');
    gw = await startGateway({ redis: testRedis.redis });
  });
  after(async () => {
    await gw?.close();
    await testRedis.close();
  });

  describe('GET /.well-known/openid-configuration and /.well-known/oauth-authorization-server', () => {
    it('answers the issuer metadata without a signature, the same document under both names, with a request id', async () => {
      const before = proxied();
      const [openid, rfc8414] = await Promise.all([send(gw.url, 'GET', OPENID), send(gw.url, 'GET', OAUTH)]);
      for (const res of [openid, rfc8414]) {
        assert.equal(res.status, 200, res.body.toString());
        assert.equal(res.headers['content-type'], 'application/json');
        assertCacheable(res, 'metadata');
        assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/);
      }
      const issuer = gw.issuer.issuer;
      assert.deepEqual(openid.json(), {
        issuer,
        jwks_uri: `${issuer}/.well-known/jwks.json`,
        introspection_endpoint: `${issuer}/v1/auth/introspect`,
        introspection_endpoint_auth_methods_supported: ['http_message_signature'],
        revocation_endpoint: `${issuer}/v1/auth/revoke`,
        revocation_endpoint_auth_methods_supported: ['http_message_signature'],
        response_types_supported: [],
        grant_types_supported: [],
        // The algorithms of the keys published: the test issuer's one ES256 key.
        access_token_signing_alg_values_supported: ['ES256'],
        service_documentation: `${issuer}/docs`,
      });
      assert.deepEqual(rfc8414.body, openid.body);
      assert.equal(rfc8414.headers.etag, openid.headers.etag);
      assert.equal(proxied(), before, 'nothing proxied');
      const logged = gw.logs.lines().find((l) => (l.req as { id?: string } | undefined)?.id === openid.headers['x-request-id']);
      assert.equal(logged?.msg, 'GET 200', 'one log line with the request id, as every answer');
    });

    it('passes a well-known OAuth client library\'s discovery check (oauth4webapi): the issuer matches, the endpoints are found', async () => {
      for (const path of [OPENID, OAUTH]) {
        const as = await oauth.processDiscoveryResponse(new URL(gw.issuer.issuer), await fetch(`${gw.url}${path}`));
        assert.equal(as.issuer, gw.issuer.issuer, path);
        assert.equal(as.revocation_endpoint, `${gw.issuer.issuer}/v1/auth/revoke`, path);
      }
    });

    it('answers If-None-Match naming its ETag (strong or weak) with 304 and no body, and any other with the document', async () => {
      const first = await send(gw.url, 'GET', OPENID);
      const etag = String(first.headers.etag);
      for (const condition of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        const res = await send(gw.url, 'GET', OPENID, { 'if-none-match': condition });
        assert.equal(res.status, 304, condition);
        assert.equal(res.body.length, 0, condition);
        assertCacheable(res, condition);
        assert.equal(res.headers.etag, etag, condition);
      }
      const stale = await send(gw.url, 'GET', OAUTH, { 'if-none-match': '"other"' });
      assert.equal(stale.status, 200);
      assert.deepEqual(stale.body, first.body);
    });

    it('answers HEAD as GET without the body', async () => {
      const get = await send(gw.url, 'GET', OAUTH);
      const head = await send(gw.url, 'HEAD', OAUTH);
      assert.equal(head.status, 200);
      assert.equal(head.body.length, 0);
      for (const name of ['content-type', 'content-length', 'etag', 'cache-control', 'access-control-allow-origin']) assert.equal(head.headers[name], get.headers[name], name);
    });

    it('answers a GET with a query, a body, a signature or a bearer token all the same', async () => {
      const plain = await send(gw.url, 'GET', OPENID);
      const body = Buffer.from('{"a":1}');
      const target = `${OPENID}?x=1`;
      const res = await send(gw.url, 'GET', target, { ...signedHeaders('GET', target, { key: gw.keys.hmac, bearer: 'not-a-token', body }) }, body);
      assert.equal(res.status, 200, res.body.toString());
      assert.deepEqual(res.body, plain.body);
    });
  });

  it('answers on each discovery path the body GET /openapi.json documents for it', async () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addSchema((await send(gw.url, 'GET', '/openapi.json')).json(), 'api');
    for (const path of [OPENID, OAUTH, JWKS]) {
      const validate = ajv.compile({ $ref: `api#/paths/${path.replaceAll('/', '~1')}/get/responses/200/content/application~1json/schema` });
      assert.ok(validate((await send(gw.url, 'GET', path)).json()), `${path}: ${ajv.errorsText(validate.errors)}`);
    }
  });

  it('answers any other method 405 with Allow: GET, HEAD, in the error shape, on each discovery path', async () => {
    for (const path of [OPENID, OAUTH, JWKS]) {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
        const res = await send(gw.url, method, path, { 'content-type': 'application/json' }, method === 'OPTIONS' ? undefined : Buffer.from('{}'));
        assertErrorShape(res, 405, 'Method Not Allowed', path);
        assert.equal(res.headers.allow, 'GET, HEAD', `${method} ${path}`);
      }
    }
  });

  it('answers 404 for every other well-known path and spelling, proxying nothing', async () => {
    const before = proxied();
    for (const path of ['/.well-known/other', '/.well-known/jwks.json/', '/.well-known/JWKS.json', '/.well-known/openid-configuration/x', '/.well-known/', '/.well-known']) {
      assertErrorShape(await send(gw.url, 'GET', path), 404, 'Not Found', path);
    }
    assert.equal(proxied(), before);
  });

  describe('GET /.well-known/jwks.json', () => {
    it('answers the public keys the gateway verifies tokens with: the issuer\'s key, with which its tokens verify', async () => {
      const res = await send(gw.url, 'GET', JWKS);
      assert.equal(res.status, 200, res.body.toString());
      assert.equal(res.headers['content-type'], 'application/json');
      assertCacheable(res, 'jwks');
      const { keys } = res.json() as { keys: Jwk[] };
      assert.deepEqual(keys, gw.issuer.jwks.keys);
      assert.equal('d' in keys[0]!, false);
      assert.ok(verifiesWith(gw.issuer.sign(), keys[0]!));
      assert.equal(verifiesWith(createTestIssuer().sign(), keys[0]!), false, 'another key\'s token does not');
    });

    it('answers If-None-Match naming its ETag with 304, and HEAD without the body', async () => {
      const get = await send(gw.url, 'GET', JWKS);
      const notModified = await send(gw.url, 'GET', JWKS, { 'if-none-match': String(get.headers.etag) });
      assert.equal(notModified.status, 304);
      assert.equal(notModified.body.length, 0);
      assertCacheable(notModified, 'jwks 304');
      const head = await send(gw.url, 'HEAD', JWKS);
      assert.equal(head.status, 200);
      assert.equal(head.body.length, 0);
      assert.equal(head.headers.etag, get.headers.etag);
      assert.equal(head.headers['content-length'], get.headers['content-length']);
    });

    it('when identity\'s key set cannot be fetched, answers 503 in the error shape with Retry-After', async () => {
      const local = await startGateway({ redis: testRedis.redis, env: { IDENTITY_JWKS_URL: `${await deadUrl()}/.well-known/jwks.json` } });
      try {
        const res = await send(local.url, 'GET', JWKS);
        assertErrorShape(res, 503, 'Service Unavailable', JWKS);
        assert.equal(res.json().message, 'Token verification keys are unavailable');
        assert.equal(res.headers['retry-after'], '1');
        assert.equal(res.headers['cache-control'], 'no-store', 'an error is never cached');
        // The metadata does not need the keys: it names every algorithm a key may have then.
        const metadata = await send(local.url, 'GET', OPENID);
        assert.equal(metadata.status, 200);
        assert.deepEqual(metadata.json().access_token_signing_alg_values_supported, ['ES256', 'RS256']);
      } finally {
        await local.close();
      }
    });

    it('when identity withdraws a key, it leaves the published set within JWKS_REFRESH_MS, as the gateway stops accepting its tokens', async () => {
      const dropped = createTestIssuer();
      let served: unknown = { keys: [] };
      const identityKeys = await startUpstream((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(served));
      });
      const local = await startGateway({ redis: testRedis.redis, env: { IDENTITY_JWKS_URL: `${identityKeys.url}/.well-known/jwks.json`, JWKS_REFRESH_MS: '100' } });
      const published = async () => ((await send(local.url, 'GET', JWKS)).json() as { keys: Jwk[] }).keys.map((k) => k.kid);
      const stations = '/v1/weather-stations/get-cities';
      const call = async (token: string) => (await send(local.url, 'GET', stations, signedHeaders('GET', stations, { key: local.keys.hmac, bearer: token }))).status;
      try {
        const rsa = { ...generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'jwk' }), kid: 'rsa-key', alg: 'RS256', use: 'sig' };
        const algorithms = async () => (await send(local.url, 'GET', OPENID)).json().access_token_signing_alg_values_supported as string[];
        served = { keys: [...local.issuer.jwks.keys, rsa] };
        assert.deepEqual(await published(), [local.issuer.kid, 'rsa-key']);
        assert.deepEqual(await algorithms(), ['ES256', 'RS256'], 'the metadata names the algorithms of the keys published');
        served = { keys: [...local.issuer.jwks.keys, ...dropped.jwks.keys] };
        const untilRsaGone = Date.now() + 2000;
        while ((await published()).includes('rsa-key')) {
          assert.ok(Date.now() < untilRsaGone, 'the RSA key still published after 2 s');
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        assert.deepEqual(await published(), [local.issuer.kid, dropped.kid]);
        assert.deepEqual(await algorithms(), ['ES256'], 'an algorithm of no key published is named');
        // One token accepted before the withdrawal: remembered, it is refused all the same after it.
        const before = dropped.sign();
        assert.equal(await call(before), 200);
        assert.equal(await call(before), 200);

        served = local.issuer.jwks;
        const deadline = Date.now() + 2000;
        while ((await published()).includes(dropped.kid)) {
          assert.ok(Date.now() < deadline, 'the withdrawn key still published after 2 s');
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        assert.deepEqual(await published(), [local.issuer.kid]);
        assert.equal(await call(dropped.sign()), 401, 'what is published is what is accepted');
        assert.equal(await call(before), 401, 'a token of the withdrawn key accepted before is refused now');
        assert.equal(await call(local.issuer.sign()), 200);
      } finally {
        await local.close();
        await identityKeys.close();
      }
    });
  });
});
