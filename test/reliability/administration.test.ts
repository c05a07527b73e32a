import assert from 'node:assert/strict';
import { claimsOf } from './support/forge-jwt.ts';
import { CLIENT_KEY, type LoggedInUser, type Stack, startStack } from './support/stack.ts';

// CONTRACT.md part 11 through the real stack: a session ended by its owner or an ADMIN stops its access
// tokens at once at the gateway and at every service, through the shared blacklist; the trail says who;
// the user operations beside the literal /v1/users paths are routed as documented.
describe('administration, audit and sessions through the gateway', function () {
  this.timeout(60_000);
  let stack: Stack;
  let admin: LoggedInUser;

  before(async () => {
    stack = await startStack();
    admin = await stack.userWith(['ADMIN']);
  });
  after(async () => {
    await stack?.close();
  });

  const direct = async (base: string, path: string, bearer: string) => (await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${bearer}` } })).status;
  /** A token's verdict at the gateway, at identity directly and at risk directly. */
  const everywhere = async (user: { id: string; accessToken: string }) => [
    (await stack.call('GET', '/v1/weather-stations/get-cities', { bearer: user.accessToken })).status,
    await direct(stack.identityUrl, `/v1/accounts/${user.id}`, user.accessToken),
    await direct(stack.riskUrl, '/v1/weather-stations/get-cities', user.accessToken),
  ];
  const sid = (token: string) => String(claimsOf(token).sid);
  async function secondLogin(user: LoggedInUser): Promise<LoggedInUser> {
    const res = await stack.call('POST', '/v1/auth/login', { body: { username: user.username, password: user.password } });
    assert.equal(res.status, 200);
    return { ...user, ...(res.json() as { accessToken: string; refreshToken: string }) };
  }

  it('a session lists where it was opened: the client key the gateway verified and the client\'s address', async () => {
    const user = await stack.userWith(['STANDARD_USER']);
    const res = await stack.call('GET', '/v1/auth/sessions', { bearer: user.accessToken });
    assert.equal(res.status, 200, res.body.toString());
    const [session, ...more] = res.json().items as Array<Record<string, unknown>>;
    assert.deepEqual(more, []);
    assert.deepEqual([session!.sessionId, session!.current, session!.clientKeyId, session!.sourceAddress], [sid(user.accessToken), true, CLIENT_KEY.keyId, '127.0.0.1']);
  });

  it('when the owner ends a stolen session, its token is refused at once at the gateway, identity and risk; the owner\'s own keeps working', async () => {
    const stolen = await stack.userWith(['STANDARD_USER']);
    const mine = await secondLogin(stolen);
    assert.deepEqual(await everywhere(stolen), [200, 404, 200], 'control');
    const res = await stack.call('DELETE', `/v1/auth/sessions/${sid(stolen.accessToken)}`, { bearer: mine.accessToken });
    assert.equal(res.status, 204, res.body.toString());
    assert.deepEqual(await everywhere(stolen), [401, 401, 401]);
    assert.equal((await stack.call('POST', '/v1/auth/refresh', { body: { refreshToken: stolen.refreshToken } })).status, 401);
    assert.deepEqual(await everywhere(mine), [200, 404, 200]);
  });

  it('when an ADMIN ends every session of a user, each of its tokens is refused everywhere, and the trail names the ADMIN, its client key and address', async () => {
    const user = await stack.userWith(['STANDARD_USER']);
    const other = await secondLogin(user);
    const res = await stack.call('DELETE', `/v1/auth/sessions?userId=${user.id}`, { bearer: admin.accessToken });
    assert.equal(res.status, 204, res.body.toString());
    assert.deepEqual(await everywhere(user), [401, 401, 401]);
    assert.deepEqual(await everywhere(other), [401, 401, 401]);

    const trail = await stack.call('GET', `/v1/audit/events?subjectUserId=${user.id}&type=session.revoked`, { bearer: admin.accessToken });
    assert.equal(trail.status, 200, trail.body.toString());
    const [event, ...more] = trail.json().items as Array<Record<string, unknown>>;
    assert.deepEqual(more, []);
    const details = event!.details as { sessionIds: string[]; reason: string };
    assert.deepEqual(
      { ...event, id: undefined, at: undefined, requestId: undefined, details: { ...details, sessionIds: [...details.sessionIds].sort() } },
      {
        id: undefined,
        at: undefined,
        requestId: undefined,
        type: 'session.revoked',
        actorUserId: admin.id,
        subjectUserId: user.id,
        clientKeyId: CLIENT_KEY.keyId,
        sourceAddress: '127.0.0.1',
        details: { sessionIds: [sid(other.accessToken), sid(user.accessToken)].sort(), reason: 'revoked' },
      },
    );
    assert.equal(res.headers['x-request-id'], event!.requestId, 'the request id the gateway passed on');
  });

  it('GET /v1/users/{userId} reaches identity, and a GET on a literal path beside it is 405 with that path\'s Allow, at the gateway as at identity', async () => {
    const user = await stack.userWith(['STANDARD_USER']);
    const self = await stack.call('GET', `/v1/users/${user.id}`, { bearer: user.accessToken });
    assert.deepEqual([self.status, self.json().userId], [200, user.id]);
    const found = await stack.call('GET', `/v1/users?username=${encodeURIComponent(user.username)}`, { bearer: admin.accessToken });
    assert.deepEqual((found.json().items as Array<{ userId: string }>).map((u) => u.userId), [user.id]);
    for (const [path, allow] of [
      ['/v1/users/create', 'POST'],
      ['/v1/users/update', 'PATCH'],
      ['/v1/users/password-reset', 'POST'],
      ['/v1/users/password-reset-request', 'POST'],
    ]) {
      const viaGateway = await stack.call('GET', path!, { bearer: admin.accessToken });
      const direct = await fetch(`${stack.identityUrl}${path}`, { headers: { authorization: `Bearer ${admin.accessToken}` } });
      assert.deepEqual([viaGateway.status, viaGateway.headers.allow, direct.status, direct.headers.get('allow')], [405, allow, 405, allow], path);
    }
  });

  it('the audit trail is ADMIN-only through the gateway too', async () => {
    const user = await stack.userWith(['POWER_USER']);
    assert.equal((await stack.call('GET', '/v1/audit/events', { bearer: user.accessToken })).status, 403);
    assert.equal((await stack.call('GET', '/v1/audit/events')).status, 401);
    const wrongMethod = await stack.call('DELETE', '/v1/audit/events', { bearer: admin.accessToken });
    assert.deepEqual([wrongMethod.status, wrongMethod.headers.allow], [405, 'GET']);
  });
});
