import assert from 'node:assert/strict';
import request from 'supertest';
import { INTROSPECTION_KEY_MESSAGE } from '@platform/auth';
import { createAccessTokenIssuer } from '../src/auth/access-tokens.ts';
import { type IdentityHarness, type TestUser, startIdentity } from './support/identity-harness.ts';

/** The claims of a token (no check: the service checked it). */
const claimsOf = (token: string): Record<string, unknown> => JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;

/**
 * CONTRACT.md part 16 at identity: introspection (RFC 7662) and revocation (RFC 7009), form-encoded, errors
 * in RFC 6749 §5.2's shape; tokens bound to the client key that logged in (`cnf.kid`). Which keys may
 * introspect is the gateway's to say (gateway-token-endpoints.test.ts); here the requests come as the gateway
 * forwards them, under its assertion naming the client key.
 */
describe('token endpoints: introspection, revocation, binding (CONTRACT.md part 16)', function () {
  this.timeout(30_000);
  let identity: IdentityHarness;
  before(async () => {
    // The keeper looks only when told to: a loss stays unrepaired until the test says so.
    identity = await startIdentity({ REVOCATION_MIRROR_CHECK_MS: '4000' });
  });
  after(async () => {
    await identity.close();
  });

  const origin = (clientKeyId: string) => ({ address: '203.0.113.7', clientKeyId });
  const form = (path: string, fields: Record<string, string>, clientKeyId = 'resource-server') =>
    request(identity.app).post(path).set(identity.viaGateway('POST', path, origin(clientKeyId))).type('form').send(fields);
  const introspect = (token: string, hint?: string) => form('/v1/auth/introspect', hint === undefined ? { token } : { token, token_type_hint: hint });
  const revoke = (token: string, clientKeyId = 'client-a', hint?: string) => form('/v1/auth/revoke', hint === undefined ? { token } : { token, token_type_hint: hint }, clientKeyId);
  const json = (method: 'post' | 'delete' | 'get', path: string, clientKeyId: string, body?: object, bearer?: string) => {
    const call = request(identity.app)[method](path).set(identity.viaGateway(method.toUpperCase(), path, origin(clientKeyId)));
    if (bearer !== undefined) call.set('Authorization', `Bearer ${bearer}`);
    return body === undefined ? call : call.send(body);
  };
  const loginAs = async (user: TestUser, clientKeyId = 'client-a') => {
    const res = await json('post', '/v1/auth/login', clientKeyId, { username: user.username, password: user.password });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body as { accessToken: string; refreshToken: string };
  };
  const assertInactive = async (token: string, why: string, hint?: string) => {
    const res = await introspect(token, hint);
    assert.equal(res.status, 200, `${why}: ${JSON.stringify(res.body)}`);
    assert.deepEqual(res.body, { active: false }, why);
  };

  describe('introspection', () => {
    it('answers a live access token with its claims, bound to the client key that logged in, never cached', async () => {
      const user = await identity.createUser({ roles: ['STANDARD_USER'] });
      const { accessToken } = await loginAs(user);
      const claims = claimsOf(accessToken);
      assert.deepEqual(claims.cnf, { kid: 'client-a' });
      assert.equal(claims.iss, identity.config.TOKEN_ISSUER);
      const res = await introspect(accessToken);
      assert.equal(res.status, 200);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.deepEqual(res.body, {
        active: true,
        token_type: 'Bearer',
        token_use: 'access_token',
        sub: user.id,
        username: user.username,
        sid: claims.sid,
        client_id: 'client-a',
        iss: identity.config.TOKEN_ISSUER,
        exp: claims.exp,
        iat: claims.iat,
        roles: ['STANDARD_USER'],
        aal: 1,
      });
    });

    it('answers a live refresh token, with or without the hint, and a direct login\'s token without client_id', async () => {
      const user = await identity.createUser();
      const { refreshToken } = await loginAs(user, 'client-b');
      for (const hint of [undefined, 'refresh_token', 'access_token', 'something-else']) {
        const res = await introspect(refreshToken, hint);
        assert.equal(res.status, 200);
        assert.equal(res.body.active, true, `hint ${hint}`);
        assert.equal(res.body.token_use, 'refresh_token');
        assert.equal('token_type' in res.body, false, 'a refresh token has an access token\'s type');
        assert.equal(res.body.sub, user.id);
        assert.equal(res.body.client_id, 'client-b');
        assert.ok(res.body.exp > res.body.iat);
      }
      const direct = await identity.login(await identity.createUser());
      assert.equal(claimsOf(direct.accessToken).cnf, undefined, 'a session opened without a client key is unbound');
      const res = await introspect(direct.accessToken);
      assert.equal(res.body.active, true);
      assert.equal('client_id' in res.body, false);
    });

    it('answers exactly { active: false } for every kind of dead token', async () => {
      const dead: Array<[string, string]> = [];
      // Logged out: the access token and its session's refresh token.
      const a = await loginAs(await identity.createUser());
      assert.equal((await json('post', '/v1/auth/logout', 'client-a', { jwtToken: a.accessToken })).status, 200);
      dead.push(['logged out', a.accessToken], ['refresh token of a logged-out session', a.refreshToken]);
      // Its session ended (DELETE /v1/auth/sessions: every session of the caller).
      const b = await loginAs(await identity.createUser());
      assert.equal((await json('delete', '/v1/auth/sessions', 'client-a', undefined, b.accessToken)).status, 204);
      dead.push(['session ended', b.accessToken]);
      // Revoked by /v1/auth/revoke.
      const c = await loginAs(await identity.createUser());
      assert.equal((await revoke(c.accessToken)).status, 200);
      dead.push(['revoked', c.accessToken]);
      // Rotated by a refresh.
      const d = await loginAs(await identity.createUser());
      assert.equal((await json('post', '/v1/auth/refresh', 'client-a', { refreshToken: d.refreshToken })).status, 200);
      dead.push(['rotated refresh token', d.refreshToken]);
      // Expired: signed by identity's own key, past its exp and the clock tolerance.
      const user = await identity.createUser();
      const expired = createAccessTokenIssuer({ key: identity.signingKey, issuer: identity.config.TOKEN_ISSUER, audience: identity.config.JWT_AUDIENCE, ttlS: -600, sessionMaxLifetimeS: 86_400 });
      dead.push(['expired', expired.issue({ userId: user.id, username: user.username, roles: user.roles, sessionId: crypto.randomUUID(), sessionCreatedAt: new Date(), aal: 1, secondFactorRequired: false }).token]);
      // Another issuer's or garbage.
      const [header, payload] = a.accessToken.split('.');
      dead.push(['malformed', 'not-a-token'], ['unsigned', `${header}.${payload}.`], ['unknown refresh token', 'A'.repeat(43)]);
      for (const [why, token] of dead) await assertInactive(token, why);
    });

    it('answers { active: false } for a token whose signing key is no longer published (withdrawn)', async () => {
      const { accessToken } = await loginAs(await identity.createUser());
      assert.equal((await introspect(accessToken)).body.active, true);
      // A restart with a new key and without the old one among JWT_PREVIOUS_PUBLIC_KEYS: the old key is withdrawn.
      await identity.restart({});
      await assertInactive(accessToken, 'signed by a withdrawn key');
    });

    it('answers 503, never active, while the revocations are being restored after Redis lost its data', async () => {
      const { accessToken } = await loginAs(await identity.createUser());
      await identity.loseRedisData();
      const during = await introspect(accessToken);
      assert.equal(during.status, 503, JSON.stringify(during.body));
      assert.equal(during.body.status, 503);
      assert.ok(Number(during.headers['retry-after']) >= 1);
      await identity.revocations.checkNow();
      assert.equal((await introspect(accessToken)).body.active, true);
    });

    it('answers 403 to a caller the gateway does not vouch for (no client key), whatever the token: a direct call cannot introspect', async () => {
      const { accessToken, refreshToken } = await loginAs(await identity.createUser());
      const path = '/v1/auth/introspect';
      // Called directly; with a client key header the gateway did not assert; with an assertion of another request.
      const forged = identity.viaGateway('POST', '/v1/auth/revoke', origin('resource-server'));
      const callers = {
        direct: {},
        'a client key header alone': { 'x-client-key-id': 'resource-server' },
        'an assertion of another path': forged,
      };
      for (const [how, headers] of Object.entries(callers)) {
        for (const token of [accessToken, refreshToken, 'not-a-token']) {
          const res = await request(identity.app).post(path).set(headers).type('form').send({ token });
          assert.equal(res.status, 403, `${how}: ${JSON.stringify(res.body)}`);
          assert.equal(res.body.message, INTROSPECTION_KEY_MESSAGE, how);
          assert.equal(res.body.path, path, how);
          assert.equal(res.body.active, undefined, how);
        }
      }
      // The same token, vouched for: alive.
      assert.equal((await introspect(accessToken)).body.active, true);
    });
  });

  describe('revocation', () => {
    it('revokes an access token alone: the session and its refresh token live on, audited', async () => {
      const user = await identity.createUser();
      const { accessToken, refreshToken } = await loginAs(user);
      const res = await revoke(accessToken);
      assert.equal(res.status, 200);
      assert.equal(res.text, '');
      await assertInactive(accessToken, 'revoked');
      assert.equal((await introspect(refreshToken)).body.active, true);
      assert.equal((await json('post', '/v1/auth/refresh', 'client-a', { refreshToken })).status, 200);
      const events = await identity.db('audit_events').where({ subject_user_id: user.id, type: 'access_token.revoked' });
      assert.equal(events.length, 1);
      assert.equal(events[0].client_key_id, 'client-a');
      assert.doesNotMatch(JSON.stringify(events[0].details), new RegExp(accessToken.slice(-20)));
    });

    it('when Redis does not take a revocation, answers 503 with it recorded; the retry with the same key writes the blacklist and records nothing twice', async () => {
      const user = await identity.createUser();
      const { accessToken } = await loginAs(user);
      const { revocations } = identity;
      const revokeInRedis = revocations.revoke.bind(revocations);
      revocations.revoke = async () => {
        throw new Error('Command timed out');
      };
      let first;
      try {
        first = await revoke(accessToken);
      } finally {
        revocations.revoke = revokeInRedis;
      }
      assert.equal(first.status, 503, JSON.stringify(first.body));
      assert.equal((await revoke(accessToken)).status, 200);
      await assertInactive(accessToken, 'revoked on the retry');
      const events = await identity.db('audit_events').where({ subject_user_id: user.id, type: 'access_token.revoked' });
      assert.equal(events.length, 1, 'the retry recorded the revocation again');
    });

    it('deletes a few records of revoked tokens no verifier needs any more with each revocation, and keeps the live ones', async () => {
      const user = await identity.createUser();
      const { accessToken } = await loginAs(user);
      const sid = claimsOf(accessToken).sid as string;
      await identity.db('revoked_tokens').insert(Array.from({ length: 10 }, (_, i) => ({ token_id: `old-${sid}-${i}`, session_id: sid, expires_at: new Date(Date.now() - 2 * 3600 * 1000) })));
      const expired = async () => Number((await identity.db('revoked_tokens').where('expires_at', '<', new Date(Date.now() - 3600 * 1000)).count({ n: '*' }))[0]?.n);
      const counts: number[] = [];
      for (let i = 0; i < 2; i += 1) {
        assert.equal((await revoke((await loginAs(user)).accessToken)).status, 200);
        counts.push(await expired());
      }
      assert.deepEqual(counts, [2, 0]);
      const live = identity.db('revoked_tokens').whereIn('session_id', identity.db('sessions').where({ user_id: user.id }).select('id')).where('expires_at', '>', new Date());
      assert.equal(Number((await live.count({ n: '*' }))[0]?.n), 2, 'a live record was deleted');
    });

    it('keeps an access token revoked alone revoked after Redis lost its data (re-seeded from Postgres)', async () => {
      const { accessToken } = await loginAs(await identity.createUser());
      assert.equal((await revoke(accessToken)).status, 200);
      await identity.loseRedisData();
      await identity.revocations.checkNow();
      await assertInactive(accessToken, 'revoked, then Redis lost its data');
    });

    it('ends the session of a refresh token: its access token dies at once', async () => {
      const { accessToken, refreshToken } = await loginAs(await identity.createUser());
      assert.equal((await revoke(refreshToken, 'client-a', 'refresh_token')).status, 200);
      await assertInactive(accessToken, 'access token of a revoked refresh token\'s session');
      await assertInactive(refreshToken, 'revoked refresh token');
      assert.equal((await json('post', '/v1/auth/refresh', 'client-a', { refreshToken })).status, 401);
    });

    it('answers 200 with no body for any token, known or not, dead or alive, so it reveals nothing', async () => {
      const { accessToken } = await loginAs(await identity.createUser());
      for (const token of ['unknown', 'A'.repeat(43), accessToken, accessToken]) {
        const res = await revoke(token);
        assert.equal(res.status, 200);
        assert.equal(res.text, '');
      }
    });

    it('leaves alone a token bound to another client key than the caller\'s, answering the same 200', async () => {
      const { accessToken, refreshToken } = await loginAs(await identity.createUser(), 'client-a');
      assert.equal((await revoke(accessToken, 'client-b')).status, 200);
      assert.equal((await revoke(refreshToken, 'client-b')).status, 200);
      assert.equal((await introspect(accessToken)).body.active, true);
      assert.equal((await introspect(refreshToken)).body.active, true);
    });

    it('answers a malformed request in RFC 6749 §5.2\'s shape: 400 invalid_request, on both endpoints', async () => {
      for (const path of ['/v1/auth/introspect', '/v1/auth/revoke']) {
        for (const body of [{}, { token: '' }, { token: 'x'.repeat(4097) }, { hint: 'x' }]) {
          const res = await form(path, body as Record<string, string>);
          assert.equal(res.status, 400, `${path} ${JSON.stringify(body)}`);
          assert.equal(res.body.error, 'invalid_request');
          assert.equal(typeof res.body.error_description, 'string');
          assert.equal(res.headers['cache-control'], 'no-store');
          assert.equal('path' in res.body, false, 'not SPEC.md\'s shape');
        }
        const repeated = await request(identity.app).post(path).set(identity.viaGateway('POST', path, origin('client-a'))).type('form').send('token=a&token=b');
        assert.equal(repeated.status, 400);
        assert.equal(repeated.body.error, 'invalid_request');
        // Unknown fields, whatever their names: a name an object holds already, or one the parser drops, is no exception.
        const sent = (text: string) => request(identity.app).post(path).set(identity.viaGateway('POST', path, origin('client-a'))).type('form').send(text);
        for (const name of ['foo', '__proto__', '__%70roto__', 'constructor', 'toString', 'hasOwnProperty', '']) {
          const unknown = await sent(`token=a&${name}=x`);
          assert.equal(unknown.status, 400, `${path} ${name}: ${JSON.stringify(unknown.body)}`);
          assert.equal(unknown.body.error, 'invalid_request', name);
        }
        // What the parser reads as the form says: a byte order mark, '+' and escapes in a name, empty pairs.
        for (const text of ['\uFEFFtoken=a', 't%6Fken=a', 'token=a&&', 'token=a+b&token_type_hint=access_token']) {
          assert.equal((await sent(text)).status, 200, JSON.stringify(text));
        }
        // More fields than a form of these endpoints may have: malformed too, not a body too large (it is small).
        const crowded = await form(path, Object.fromEntries([['token', 'a'], ...Array.from({ length: 24 }, (_, i) => [`f${i}`, 'v'])]));
        assert.equal(crowded.status, 400, JSON.stringify(crowded.body));
        assert.equal(crowded.body.error, 'invalid_request');
        assert.equal(crowded.body.error_description, 'The form has too many fields');
        // Not malformed but of another media type: SPEC.md's 415, as the gateway's own refusals there.
        const asJson = await request(identity.app).post(path).set(identity.viaGateway('POST', path, origin('client-a'))).send({ token: 'a' });
        assert.equal(asJson.status, 415);
        assert.equal(asJson.body.error, 'Unsupported Media Type');
        assert.equal(asJson.body.message, 'Unsupported Content-Type; send application/x-www-form-urlencoded', 'the type these endpoints take');
        // No body at all: its token is missing, a malformed request (RFC 7009 and 7662), not a media type.
        const bare = await request(identity.app).post(path).set(identity.viaGateway('POST', path, origin('client-a')));
        assert.equal(bare.status, 400, JSON.stringify(bare.body));
        assert.deepEqual(bare.body, { error: 'invalid_request', error_description: 'The request has no body; send the form field token as application/x-www-form-urlencoded' });
        assert.equal(bare.headers['cache-control'], 'no-store');
      }
      // Every other operation keeps SPEC.md's shape.
      const login = await request(identity.app).post('/v1/auth/login').send({});
      assert.equal(login.status, 400);
      assert.equal(login.body.error, 'Bad Request');
    });
  });

  describe('binding to the client key (cnf.kid)', () => {
    it('refuses a refresh or a logout under another client key with 401 Token bound to another client, leaving the session alive', async () => {
      const { accessToken, refreshToken } = await loginAs(await identity.createUser(), 'client-a');
      const stolen = await json('post', '/v1/auth/refresh', 'client-b', { refreshToken });
      assert.equal(stolen.status, 401);
      assert.equal(stolen.body.message, 'Token bound to another client');
      const logout = await json('post', '/v1/auth/logout', 'client-b', { jwtToken: accessToken });
      assert.equal(logout.status, 401);
      assert.equal(logout.body.message, 'Token bound to another client');
      const own = await json('post', '/v1/auth/refresh', 'client-a', { refreshToken });
      assert.equal(own.status, 200, 'the owner still refreshes: the refused attempt rotated nothing');
      assert.deepEqual(claimsOf(own.body.accessToken).cnf, { kid: 'client-a' }, 'a refresh keeps the binding');
    });

    it('refuses a rotated refresh token under another client key as bound, not as a reuse: the owner\'s session lives on', async () => {
      const { refreshToken: rotated } = await loginAs(await identity.createUser(), 'client-a');
      const first = await json('post', '/v1/auth/refresh', 'client-a', { refreshToken: rotated });
      assert.equal(first.status, 200);
      const replayed = await json('post', '/v1/auth/refresh', 'client-b', { refreshToken: rotated });
      assert.equal(replayed.status, 401);
      assert.equal(replayed.body.message, 'Token bound to another client');
      const own = await json('post', '/v1/auth/refresh', 'client-a', { refreshToken: first.body.refreshToken });
      assert.equal(own.status, 200, 'another client key ended the session by presenting its old refresh token');
      const sessionId = claimsOf(own.body.accessToken).sid;
      assert.equal(await identity.db('audit_events').where({ type: 'refresh_token.reused' }).whereRaw("details->>'sessionId' = ?", [String(sessionId)]).first(), undefined, 'recorded as a reuse');
      // Under its own key the rotated token is a reuse, as before: the session ends.
      const reused = await json('post', '/v1/auth/refresh', 'client-a', { refreshToken: rotated });
      assert.equal(reused.status, 401);
      assert.equal(reused.body.message, 'Bad Credentials');
      assert.equal((await json('post', '/v1/auth/refresh', 'client-a', { refreshToken: own.body.refreshToken })).status, 401, 'the reuse under its own key ends the session');
    });

    it('refuses an ADMIN token on the password reset request, where a token is optional, under another client key: no reset token, nothing recorded', async () => {
      const admin = await loginAs(await identity.createUser({ roles: ['ADMIN'] }), 'client-a');
      const victim = await identity.createUser();
      const before = await identity.db('password_reset_tokens').count({ n: '*' }).first();
      const stolen = await json('post', '/v1/users/password-reset-request', 'client-b', { username: victim.username }, admin.accessToken);
      assert.equal(stolen.status, 401, JSON.stringify(stolen.body));
      assert.equal(stolen.body.message, 'Token bound to another client');
      assert.deepEqual(await identity.db('password_reset_tokens').count({ n: '*' }).first(), before, 'a reset token was made');
      const own = await json('post', '/v1/users/password-reset-request', 'client-a', { username: victim.username }, admin.accessToken);
      assert.equal(own.status, 201, JSON.stringify(own.body));
      assert.equal(typeof own.body.token, 'string', 'the ADMIN under its own key gets the reset token');
    });

    it('lets any client key refresh with TOKEN_BINDING=off', async () => {
      await identity.restart({ TOKEN_BINDING: 'off' });
      try {
        const { refreshToken } = await loginAs(await identity.createUser(), 'client-a');
        assert.equal((await json('post', '/v1/auth/refresh', 'client-b', { refreshToken })).status, 200);
      } finally {
        await identity.restart({});
      }
    });
  });
});
