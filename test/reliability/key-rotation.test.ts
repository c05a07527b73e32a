import assert from 'node:assert/strict';
import { generateSigningKeyPem, signingKeyFromPem } from '../../services/identity/src/auth/signing-key.ts';
import { claimsOf, forgeJwt, headerOf } from './support/forge-jwt.ts';
import { type Stack, startStack } from './support/stack.ts';

/** How long after its last fetch a verifier (packages/auth key-source.ts) may fetch the JWKS again for an unknown kid. */
const JWKS_REFETCH_INTERVAL_MS = 30_000;

const publicPem = (privatePem: string) => signingKeyFromPem(privatePem).publicKey.export({ format: 'pem', type: 'spki' }).toString();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// README "Rotate the token signing key", step by step, with identity restarted between the steps and the
// gateway and risk running on, verifying against identity's JWKS as in production.
describe('signing-key rotation through the stack: tokens of the old key stay valid until the old key is removed', function () {
  this.timeout(120_000);
  const oldKey = generateSigningKeyPem();
  const newKey = generateSigningKeyPem();
  let stack: Stack;

  before(async () => {
    // Step 1 done: the next key is published (not yet signing), so every verifier knows it before any token carries it.
    stack = await startStack({ env: { JWT_PRIVATE_KEY: oldKey, JWT_PREVIOUS_PUBLIC_KEYS: publicPem(newKey) } });
  });
  after(async () => {
    await stack?.close();
  });

  const direct = async (base: string, path: string, bearer: string) => (await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${bearer}` } })).status;
  /** A token's verdict at the gateway (a station lookup), at identity directly (its own account: 404, none made) and at risk directly. */
  const everywhere = async (token: string) => [
    (await stack.call('GET', '/v1/weather-stations/get-cities', { bearer: token })).status,
    await direct(stack.identityUrl, `/v1/accounts/${String(claimsOf(token).sub)}`, token),
    await direct(stack.riskUrl, '/v1/weather-stations/get-cities', token),
  ];
  const kidOf = (token: string) => headerOf(token).kid;

  it('the old key\'s tokens are accepted at the gateway, identity and risk after identity signs with the new key, and refused once the old key is removed', async () => {
    // Before the rotation: tokens carry the old key and are accepted everywhere.
    const user = await stack.userWith(['STANDARD_USER']);
    const oldToken = user.accessToken;
    assert.equal(kidOf(oldToken), signingKeyFromPem(oldKey).kid);
    const firstFetch = Date.now();
    assert.deepEqual(await everywhere(oldToken), [200, 404, 200], 'before the rotation');

    // Step 2: identity restarts signing with the new key, the old one in JWT_PREVIOUS_PUBLIC_KEYS.
    stack.identity.restart({ JWT_PRIVATE_KEY: newKey, JWT_PREVIOUS_PUBLIC_KEYS: publicPem(oldKey) });
    const jwks = await fetch(`${stack.identityUrl}/.well-known/jwks.json`);
    assert.equal(jwks.headers.get('cache-control'), 'public, max-age=300');
    assert.deepEqual(
      ((await jwks.json()) as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid),
      [signingKeyFromPem(newKey).kid, signingKeyFromPem(oldKey).kid],
    );
    assert.deepEqual(await everywhere(oldToken), [200, 404, 200], 'a token of the old key after the rotation');
    // The old session's refresh and a new login both get tokens of the new key, accepted everywhere at once.
    const refresh = await stack.call('POST', '/v1/auth/refresh', { body: { refreshToken: user.refreshToken } });
    assert.equal(refresh.status, 200, refresh.body.toString());
    const renewed = refresh.json().accessToken as string;
    const newcomer = await stack.userWith(['STANDARD_USER']);
    for (const token of [renewed, newcomer.accessToken]) {
      assert.equal(kidOf(token), signingKeyFromPem(newKey).kid);
      assert.deepEqual(await everywhere(token), [200, 404, 200], 'a token of the new key');
    }

    // Step 3: the old key is removed. Identity refuses its tokens at once; the gateway and risk still hold the
    // key set they fetched, and refuse them once they fetch it again (at most 10 minutes later, sooner on an
    // unknown kid): hence the runbook's wait before this step.
    stack.identity.restart({ JWT_PRIVATE_KEY: newKey, JWT_PREVIOUS_PUBLIC_KEYS: '' });
    assert.deepEqual(await everywhere(oldToken), [200, 401, 200], 'right after the removal');
    // A token naming a kid they do not know makes them fetch again (at most every 30 s).
    await sleep(Math.max(0, firstFetch + JWKS_REFETCH_INTERVAL_MS + 1000 - Date.now()));
    const stranger = signingKeyFromPem(generateSigningKeyPem());
    const unknownKid = forgeJwt({ alg: 'ES256', typ: 'JWT', kid: stranger.kid }, claimsOf(renewed), { es256: stranger.privateKey });
    assert.deepEqual(await everywhere(unknownKid), [401, 401, 401], 'a token of an unknown key');
    assert.deepEqual(await everywhere(oldToken), [401, 401, 401], 'a token of the removed key, once the keys were fetched again');
    assert.deepEqual(await everywhere(renewed), [200, 404, 200], 'a token of the current key');
  });
});
