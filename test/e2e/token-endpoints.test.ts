import assert from 'node:assert/strict';
import { ApiError, createClient, createSigner, signedFetch } from '@platform/client';
import * as oauth from 'oauth4webapi';
import { type CaptureServer, startCaptureServer } from '../../services/identity/test/support/capture-server.ts';
import { type Stack, startStack } from './support/stack.ts';

const APP_KEY = { keyId: 'app', alg: 'hmac-sha256', secret: 'e2e-app-secret-0123456789' } as const;
const OTHER_KEY = { keyId: 'other-app', alg: 'hmac-sha256', secret: 'e2e-other-secret-0123456789' } as const;
const RESOURCE_SERVER_KEY = { keyId: 'resource-server', alg: 'hmac-sha256', secret: 'e2e-rs-secret-0123456789', introspection: true } as const;

/**
 * CONTRACT.md part 16 as another team meets it: a well-known OAuth client library (oauth4webapi) discovers
 * the issuer at the gateway, introspects and revokes tokens there, its requests signed by the SDK's signer
 * (`signedFetch`); the SDK's own client keeps working with tokens bound to its key, and a token stolen to
 * another client key is refused, at a route and through refresh.
 */
describe('end to end: token endpoints with an OAuth library, tokens bound to their client key (CONTRACT.md part 16)', function () {
  this.timeout(120_000);
  let stack: Stack;
  let mail: CaptureServer;
  let sms: CaptureServer;
  let as: oauth.AuthorizationServer;

  before(async () => {
    mail = await startCaptureServer();
    sms = await startCaptureServer();
    stack = await startStack({ mailUrl: mail.url, smsUrl: sms.url }, { GATEWAY_CLIENT_KEYS: JSON.stringify([APP_KEY, OTHER_KEY, RESOURCE_SERVER_KEY]) });
  });
  after(async () => {
    await stack?.stop();
    await mail?.close();
    await sms?.close();
  });

  const sdk = (key: typeof APP_KEY | typeof OTHER_KEY) => createClient({ env: 'local', baseUrl: stack.gatewayUrl, keyId: key.keyId, key: { alg: key.alg, secret: key.secret } });
  const insecure = { [oauth.allowInsecureRequests]: true } as const;
  const asClient = (key: { keyId: string; secret: string }) => ({
    client: { client_id: key.keyId } satisfies oauth.Client,
    options: { ...insecure, [oauth.customFetch]: signedFetch(createSigner(key.keyId, { alg: 'hmac-sha256', secret: key.secret })) },
  });
  const resourceServer = () => asClient(RESOURCE_SERVER_KEY);
  const introspect = async (token: string) => {
    const { client, options } = resourceServer();
    return oauth.processIntrospectionResponse(as, client, await oauth.introspectionRequest(as, client, oauth.None(), token, options));
  };
  const newUser = async () => {
    const admin = sdk(APP_KEY);
    await admin.auth.login(stack.admin);
    const username = `user-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
    await admin.users.create({ username, password: 'Str0ng!Passw0rd', firstName: 'Ada', lastName: 'Kaya', locale: 'tr_TR', timezone: 'Europe/Istanbul', roles: ['STANDARD_USER'], status: 'ACTIVE' });
    const user = sdk(APP_KEY);
    const login = await user.auth.login({ username, password: 'Str0ng!Passw0rd' });
    return { user, login };
  };

  it('discovery: the library finds the issuer at the gateway, every token\'s iss, and verifies with its JWKS', async () => {
    const issuer = new URL(stack.gatewayUrl);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }));
    assert.equal(as.issuer, stack.gatewayUrl);
    assert.equal(as.introspection_endpoint, `${stack.gatewayUrl}/v1/auth/introspect`);
    assert.equal(as.revocation_endpoint, `${stack.gatewayUrl}/v1/auth/revoke`);
    const oidc = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oidc' }));
    assert.deepEqual(oidc, as, 'both well-known names give the same document');
    const { login } = await newUser();
    const claims = JSON.parse(Buffer.from(login.accessToken.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;
    assert.equal(claims.iss, as.issuer);
    const jwks = (await (await fetch(as.jwks_uri ?? '')).json()) as { keys: Array<{ kid: string }> };
    const kid = (JSON.parse(Buffer.from(login.accessToken.split('.')[0] ?? '', 'base64url').toString()) as { kid: string }).kid;
    assert.ok(jwks.keys.some((key) => key.kid === kid), 'the token\'s key is published');
  });

  it('introspection: a resource server\'s key learns a live token\'s claims, and { active: false } once logged out', async () => {
    const { user, login } = await newUser();
    const live = await introspect(login.accessToken);
    assert.equal(live.active, true);
    assert.equal(live.client_id, APP_KEY.keyId);
    assert.equal(live.iss, as.issuer);
    assert.equal(live.token_type, 'Bearer');
    assert.equal(live.token_use, 'access_token');
    assert.deepEqual(live.roles, ['STANDARD_USER']);
    assert.equal((await introspect(login.refreshToken)).active, true);
    await user.auth.logout();
    assert.deepEqual(await introspect(login.accessToken), { active: false });
    assert.deepEqual(await introspect(login.refreshToken), { active: false });
  });

  it('introspection: any other client key gets 403', async () => {
    const { login } = await newUser();
    const { client, options } = asClient(APP_KEY);
    const res = await oauth.introspectionRequest(as, client, oauth.None(), login.accessToken, options);
    assert.equal(res.status, 403);
  });

  it('revocation: the library revokes an access token alone, then its refresh token ends the session', async () => {
    const { user, login } = await newUser();
    const { client, options } = asClient(APP_KEY);
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), login.accessToken, options));
    assert.deepEqual(await introspect(login.accessToken), { active: false });
    const refused = await user.stations.cities().then(
      () => undefined,
      (err: unknown) => err,
    );
    // The SDK refreshes once on a 401 and retries: the session lives on, so the call goes through.
    assert.equal(refused, undefined);
    const renewed = user.getTokens();
    assert.notEqual(renewed?.accessToken, login.accessToken);
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), renewed?.refreshToken ?? '', { ...options, additionalParameters: { token_type_hint: 'refresh_token' } }));
    assert.deepEqual(await introspect(renewed?.accessToken ?? ''), { active: false });
    // An unknown token: 200 all the same.
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), 'no-such-token', options));
  });

  it('binding: a token stolen to another client key is refused at a route and through refresh; its owner is unaffected', async () => {
    const { user, login } = await newUser();
    const thief = signedFetch(createSigner(OTHER_KEY.keyId, { alg: 'hmac-sha256', secret: OTHER_KEY.secret }));
    const atRoute = await thief(`${stack.gatewayUrl}/v1/weather-stations/get-cities`, { headers: { authorization: `Bearer ${login.accessToken}` } });
    assert.equal(atRoute.status, 401);
    assert.equal(((await atRoute.json()) as { message: string }).message, 'Token bound to another client');
    const stolen = await sdk(OTHER_KEY).auth.refresh(login.refreshToken).then(
      () => assert.fail('a stolen refresh token was accepted'),
      (err: unknown) => err,
    );
    assert.ok(stolen instanceof ApiError);
    assert.equal(stolen.status, 401);
    assert.equal(stolen.body?.message, 'Token bound to another client');
    assert.ok((await user.stations.cities()).length > 0, 'the owner keeps working with the same tokens');
    await user.auth.refresh();
  });
});
