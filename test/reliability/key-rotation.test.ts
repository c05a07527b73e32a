import assert from 'node:assert/strict';
import { createPublicKey, randomUUID } from 'node:crypto';
import { generateSigningKeyPem, signingKeyFromPem } from '../../services/identity/src/auth/signing-key.ts';
import { claimsOf, forgeJwt, headerOf } from './support/forge-jwt.ts';
import { type Stack, startStack } from './support/stack.ts';

/**
 * How soon the gateway and risk must stop accepting a key once identity no longer publishes it: they
 * re-validate the key set every JWKS_REFRESH_MS (2 s by default), plus a fetch and a request.
 */
const DROPPED_WITHIN_MS = 5000;

const publicPem = (privatePem: string) => createPublicKey(privatePem).export({ format: 'pem', type: 'spki' }).toString();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// docs/deploy.md "Rotate the token signing key", step by step, with identity restarted between the steps and the
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
  /** Resolves once `token`'s verdicts are `expected` at all three; fails if that takes DROPPED_WITHIN_MS from `since`. */
  const everywhereBecomes = async (token: string, expected: number[], since: number, what: string) => {
    for (;;) {
      const verdicts = await everywhere(token);
      if (verdicts.join() === expected.join()) return;
      assert.ok(Date.now() - since < DROPPED_WITHIN_MS, `${what}: still ${verdicts.join(', ')} (gateway, identity, risk) ${DROPPED_WITHIN_MS} ms after identity's restart`);
      await sleep(100);
    }
  };
  /** What whoever holds `privatePem` can mint: a token of any user and any role, with a fresh session id. */
  const forgedWith = async (privatePem: string, like: string) => {
    const key = await signingKeyFromPem(privatePem);
    const claims = { ...claimsOf(like), roles: ['ADMIN'], sid: randomUUID(), jti: randomUUID() };
    return forgeJwt({ alg: 'ES256', typ: 'JWT', kid: key.kid }, claims, { es256: key.privateKey });
  };

  it('the old key\'s tokens are accepted at the gateway, identity and risk after identity signs with the new key, and refused at all three within seconds once the old key is removed', async () => {
    // Before the rotation: tokens carry the old key and are accepted everywhere.
    const user = await stack.userWith(['STANDARD_USER']);
    const oldToken = user.accessToken;
    assert.equal(kidOf(oldToken), (await signingKeyFromPem(oldKey)).kid);
    assert.deepEqual(await everywhere(oldToken), [200, 404, 200], 'before the rotation');

    // Step 2: identity restarts signing with the new key, the old one in JWT_PREVIOUS_PUBLIC_KEYS.
    await stack.identity.restart({ JWT_PRIVATE_KEY: newKey, JWT_PREVIOUS_PUBLIC_KEYS: publicPem(oldKey) });
    const jwks = await fetch(`${stack.identityUrl}/.well-known/jwks.json`);
    assert.equal(jwks.headers.get('cache-control'), 'public, max-age=300');
    assert.deepEqual(
      ((await jwks.json()) as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid),
      [(await signingKeyFromPem(newKey)).kid, (await signingKeyFromPem(oldKey)).kid],
    );
    assert.deepEqual(await everywhere(oldToken), [200, 404, 200], 'a token of the old key after the rotation');
    // The old session's refresh and a new login both get tokens of the new key, accepted everywhere at once.
    const refresh = await stack.call('POST', '/v1/auth/refresh', { body: { refreshToken: user.refreshToken } });
    assert.equal(refresh.status, 200, refresh.body.toString());
    const renewed = refresh.json().accessToken as string;
    const newcomer = await stack.userWith(['STANDARD_USER']);
    for (const token of [renewed, newcomer.accessToken]) {
      assert.equal(kidOf(token), (await signingKeyFromPem(newKey)).kid);
      assert.deepEqual(await everywhere(token), [200, 404, 200], 'a token of the new key');
    }

    // Step 3: the old key is removed. Identity refuses its tokens at once; the gateway and risk, which re-validate
    // their key set every few seconds, within DROPPED_WITHIN_MS: the verified-token caches drop them too.
    const forged = await forgedWith(oldKey, oldToken);
    assert.deepEqual(await everywhere(forged), [200, 404, 200], 'a token minted with the old key while it is published');
    await stack.identity.restart({ JWT_PRIVATE_KEY: newKey, JWT_PREVIOUS_PUBLIC_KEYS: '' });
    const removed = Date.now();
    assert.equal((await everywhere(oldToken))[1], 401, 'identity, right after the removal');
    await everywhereBecomes(oldToken, [401, 401, 401], removed, 'a token of the removed key');
    assert.deepEqual(await everywhere(forged), [401, 401, 401], 'a token minted with the removed key');
    const stranger = await signingKeyFromPem(generateSigningKeyPem());
    const unknownKid = forgeJwt({ alg: 'ES256', typ: 'JWT', kid: stranger.kid }, claimsOf(renewed), { es256: stranger.privateKey });
    assert.deepEqual(await everywhere(unknownKid), [401, 401, 401], 'a token of an unknown key');
    assert.deepEqual(await everywhere(renewed), [200, 404, 200], 'a token of the current key');
  });

  it('a leaked signing key: identity swapped straight to a fresh key without it, and within seconds its tokens are refused everywhere while sessions go on', async () => {
    const user = await stack.userWith(['STANDARD_USER']);
    const leaked = newKey;
    assert.equal(kidOf(user.accessToken), (await signingKeyFromPem(leaked)).kid);
    const forged = await forgedWith(leaked, user.accessToken);
    assert.deepEqual(await everywhere(forged), [200, 404, 200], 'a token minted with the leaked key before the swap');

    // docs/deploy.md, leaked key: one rollout with a key nobody has seen, and no JWT_PREVIOUS_PUBLIC_KEYS.
    const fresh = generateSigningKeyPem();
    await stack.identity.restart({ JWT_PRIVATE_KEY: fresh, JWT_PREVIOUS_PUBLIC_KEYS: '' });
    const swapped = Date.now();
    await everywhereBecomes(forged, [401, 401, 401], swapped, 'a token minted with the leaked key');
    assert.deepEqual(await everywhere(user.accessToken), [401, 401, 401], 'a genuine token of the leaked key');
    // What a client sees: a 401 on its access token, then a refresh (opaque, not signed) that gets one of the
    // fresh key, accepted everywhere although the verifiers had never seen that key before the swap.
    const refresh = await stack.call('POST', '/v1/auth/refresh', { body: { refreshToken: user.refreshToken } });
    assert.equal(refresh.status, 200, refresh.body.toString());
    const renewed = refresh.json().accessToken as string;
    assert.equal(kidOf(renewed), (await signingKeyFromPem(fresh)).kid);
    await everywhereBecomes(renewed, [200, 404, 200], swapped, 'a token of the fresh key');
  });
});
