import assert from 'node:assert/strict';
import { createHash, createHmac, generateKeyPairSync, verify, webcrypto } from 'node:crypto';
import { createSigner, signatureBase, signRequest } from '@platform/client';

// Every expected signature base below is written out by hand from RFC 9421 section 2.5, so a bug in
// the SDK's base builder cannot hide behind the same bug in the expectation.
const created = 1_750_000_000;
const nonce = 'n0nce_abcdefghijklmnopqrstuv-XYZ';
const hmacKey = { alg: 'hmac-sha256', secret: 'local-dev-secret' } as const;
const hmacOf = (base: string): string => createHmac('sha256', Buffer.from('local-dev-secret', 'utf8')).update(base, 'utf8').digest('base64');

describe('signature base and signing (RFC 9421, CONTRACT.md part 2)', () => {
  it('GET with no query: covers the four fixed components, @query is "?", HMAC-SHA256 over the base', async () => {
    const signer = createSigner('local-dev', hmacKey);
    const url = new URL('http://127.0.0.1:8080/v1/weather-stations/get-cities');
    const headers = await signRequest({ method: 'get', url, idempotencyKey: 'idem-1', created, nonce }, signer);
    const params = `("@method" "@path" "@query" "x-idempotency-key");created=1750000000;nonce="${nonce}";keyid="local-dev";alg="hmac-sha256"`;
    const base = [
      '"@method": GET',
      '"@path": /v1/weather-stations/get-cities',
      '"@query": ?',
      '"x-idempotency-key": idem-1',
      `"@signature-params": ${params}`,
    ].join('\n');
    assert.equal(headers['signature-input'], `sig1=${params}`);
    assert.equal(headers.signature, `sig1=:${hmacOf(base)}:`);
    assert.equal(headers['x-idempotency-key'], 'idem-1');
    assert.equal(headers['content-digest'], undefined);
    assert.equal(headers.authorization, undefined);
  });

  it('GET with a query and a percent-encoded Turkish path: @path and @query exactly as sent', async () => {
    const signer = createSigner('local-dev', hmacKey);
    const url = new URL(`http://127.0.0.1:8080/v1/weather-stations/get-districts-of/${encodeURIComponent('Şanlıurfa')}?limit=3&q=a%20b`);
    const headers = await signRequest({ method: 'GET', url, idempotencyKey: 'idem-2', created, nonce }, signer);
    const base = [
      '"@method": GET',
      '"@path": /v1/weather-stations/get-districts-of/%C5%9Eanl%C4%B1urfa',
      '"@query": ?limit=3&q=a%20b',
      '"x-idempotency-key": idem-2',
      `"@signature-params": ("@method" "@path" "@query" "x-idempotency-key");created=1750000000;nonce="${nonce}";keyid="local-dev";alg="hmac-sha256"`,
    ].join('\n');
    assert.equal(headers.signature, `sig1=:${hmacOf(base)}:`);
  });

  it('POST with a body and a bearer token, Ed25519 (PKCS#8 PEM): covers content-digest and authorization, verifies with node:crypto', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const signer = createSigner('partner-1', { alg: 'ed25519', privateKey: pem });
    const body = new TextEncoder().encode('{"city":"İstanbul","district":"Kadıköy","limit":2}');
    const url = new URL('https://risk.example.com/v1/weather-stations/by/city-district');
    const headers = await signRequest({ method: 'POST', url, idempotencyKey: 'idem-3', body, authorization: 'Bearer eyJ.abc.def', created, nonce }, signer);
    const digest = `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
    const params = `("@method" "@path" "@query" "x-idempotency-key" "content-digest" "authorization");created=1750000000;nonce="${nonce}";keyid="partner-1";alg="ed25519"`;
    const base = [
      '"@method": POST',
      '"@path": /v1/weather-stations/by/city-district',
      '"@query": ?',
      '"x-idempotency-key": idem-3',
      `"content-digest": ${digest}`,
      '"authorization": Bearer eyJ.abc.def',
      `"@signature-params": ${params}`,
    ].join('\n');
    assert.equal(headers['content-digest'], digest);
    assert.equal(headers.authorization, 'Bearer eyJ.abc.def');
    assert.equal(headers['signature-input'], `sig1=${params}`);
    const signature = Buffer.from(/^sig1=:(.+):$/.exec(headers.signature)![1]!, 'base64');
    assert.ok(verify(null, Buffer.from(base, 'utf8'), publicKey, signature), 'Ed25519 signature verifies over the hand-built base');
  });

  it('PATCH with a body, HMAC: the digest line comes before @signature-params', async () => {
    const signer = createSigner('local-dev', hmacKey);
    const body = new TextEncoder().encode('{"userId":"u-1","firstName":"Çağla"}');
    const url = new URL('http://127.0.0.1:8080/v1/users/update');
    const headers = await signRequest({ method: 'PATCH', url, idempotencyKey: 'idem-4', body, created, nonce }, signer);
    const base = [
      '"@method": PATCH',
      '"@path": /v1/users/update',
      '"@query": ?',
      '"x-idempotency-key": idem-4',
      `"content-digest": sha-256=:${createHash('sha256').update(body).digest('base64')}:`,
      `"@signature-params": ("@method" "@path" "@query" "x-idempotency-key" "content-digest");created=1750000000;nonce="${nonce}";keyid="local-dev";alg="hmac-sha256"`,
    ].join('\n');
    assert.equal(headers.signature, `sig1=:${hmacOf(base)}:`);
  });

  it('accepts an Ed25519 CryptoKey as well as a PEM', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const der = privateKey.export({ type: 'pkcs8', format: 'der' });
    const cryptoKey = await webcrypto.subtle.importKey('pkcs8', der, { name: 'Ed25519' }, false, ['sign']);
    const signer = createSigner('partner-2', { alg: 'ed25519', privateKey: cryptoKey });
    const headers = await signRequest({ method: 'GET', url: new URL('http://h/v1/x'), idempotencyKey: 'k', created, nonce }, signer);
    const { base } = signatureBase({ method: 'GET', path: '/v1/x', query: '', idempotencyKey: 'k', created, nonce, keyId: 'partner-2', alg: 'ed25519' });
    const signature = Buffer.from(/^sig1=:(.+):$/.exec(headers.signature)![1]!, 'base64');
    assert.ok(verify(null, Buffer.from(base, 'utf8'), publicKey, signature));
  });

  it('makes a fresh nonce of 24+ characters of [A-Za-z0-9_-] per request by default', async () => {
    const signer = createSigner('local-dev', hmacKey);
    const nonces = new Set<string>();
    for (let i = 0; i < 20; i += 1) {
      const headers = await signRequest({ method: 'GET', url: new URL('http://h/v1/x'), idempotencyKey: `k${i}` }, signer);
      nonces.add(/;nonce="([^"]+)"/.exec(headers['signature-input'])![1]!);
    }
    assert.equal(nonces.size, 20);
    for (const n of nonces) assert.match(n, /^[A-Za-z0-9_-]{24,128}$/);
  });

  it('refuses a malformed PEM, an empty secret and a bad nonce at once', () => {
    assert.throws(() => createSigner('k', { alg: 'ed25519', privateKey: 'not a pem' }), TypeError);
    assert.throws(() => createSigner('k', { alg: 'hmac-sha256', secret: '' }), TypeError);
    assert.throws(() => signatureBase({ method: 'GET', path: '/', query: '', idempotencyKey: 'k', created, nonce: 'short', keyId: 'k', alg: 'hmac-sha256' }), TypeError);
  });

  it('reproduces the worked example of README "Call the API" (a test vector for clients in other languages)', async () => {
    const signer = createSigner('local-dev', hmacKey);
    const body = new TextEncoder().encode('{"city":"İstanbul","district":"Kadıköy","limit":2}');
    const headers = await signRequest(
      {
        method: 'POST',
        url: new URL('http://127.0.0.1:8080/v1/weather-stations/by/city-district'),
        idempotencyKey: '0b6f3c2e-5d1a-4f7e-9c8b-2a4d6e8f0a1c',
        body,
        authorization: 'Bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln',
        created: 1750000000,
        nonce: 'Xq3vT9bLmN2pR7sK4wY8zA1c',
      },
      signer,
    );
    assert.equal(body.length, 53);
    assert.equal(headers['content-digest'], 'sha-256=:Cz8PUyT6O3beRu1Hc3tzOuiJ0exOu3bYFoywU3Zbfxw=:');
    assert.equal(headers.signature, 'sig1=:yflaC6fnRLoCv8MbnQ3xrlIWyfIfV7Q7CVsXImW0nZc=:');
  });
});
