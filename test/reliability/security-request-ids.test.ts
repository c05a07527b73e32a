import assert from 'node:assert/strict';
import { assertForwarding } from '@platform/service-kit';
import { eventually } from './support/ports.ts';
import { sendRaw } from './support/raw-http.ts';
import { CLIENT_KEY, type LoggedInUser, type Stack, startStack } from './support/stack.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
type Line = { msg?: string; req?: { id?: string; clientRequestId?: string } };

/**
 * Finding 3 through the real stack: a client cannot choose the request id under which its request is
 * logged and audited (and so cannot pass its request off as another's). The gateway makes its own id; a
 * service believes an incoming X-Request-Id only under the gateway's assertion over it (CONTRACT.md part 10).
 */
describe('security: request ids are the platform\'s, never the client\'s', function () {
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

  const json = (body: unknown) => Buffer.from(JSON.stringify(body));
  /** The request ids of the `login.succeeded` events of `userId`, as an ADMIN reads the trail through the gateway. */
  async function loginRequestIds(userId: string): Promise<Array<string | null>> {
    const trail = await stack.call('GET', `/v1/audit/events?subjectUserId=${userId}&type=login.succeeded`, { bearer: admin.accessToken });
    assert.equal(trail.status, 200, trail.body.toString());
    return (trail.json().items as Array<{ requestId: string | null }>).map((e) => e.requestId).sort();
  }

  it('when a client sends its own X-Request-Id through the gateway, the answer, identity\'s log and the audit event carry an id the gateway made; the client\'s is only logged beside it', async () => {
    const user = await stack.identity.createUser();
    const login = await stack.call('POST', '/v1/auth/login', { body: { username: user.username, password: user.password }, headers: { 'x-request-id': 'victim-request-id' } });
    assert.equal(login.status, 200, login.body.toString());
    const id = String(login.headers['x-request-id']);
    assert.match(id, UUID, 'the gateway answered with the client\'s id');

    assert.deepEqual(await loginRequestIds(user.id), [id], 'the audit event names another request id than the answer');
    // The gateway's lines reach its stdout within service-kit's LOG_HOLD_MS of being logged.
    assert.ok(await eventually(() => Promise.resolve((stack.logs.gateway.lines() as Line[]).some((l) => l.req?.id === id)), 2000, 20), 'the gateway did not log the login');
    assert.ok(await eventually(() => Promise.resolve((stack.identity.log.lines() as Line[]).some((l) => l.req?.id === id && l.msg === 'POST 200')), 2000, 20), 'identity did not log under the gateway\'s id');
    const gatewayLines = stack.logs.gateway.lines() as Line[];
    const identityLines = stack.identity.log.lines() as Line[];
    assert.equal(gatewayLines.find((l) => l.req?.id === id && l.msg === 'POST 200')?.req?.clientRequestId, 'victim-request-id', 'the client\'s id is not on the gateway\'s line');
    assert.ok(identityLines.some((l) => l.req?.id === id && l.msg === 'POST 200'), 'identity did not log under the gateway\'s id');
    for (const lines of [gatewayLines, identityLines]) assert.ok(!lines.some((l) => l.req?.id === 'victim-request-id'), 'a line was logged under the client\'s id');
  });

  it('when a caller reaches identity directly with an X-Request-Id, without an assertion or under one that does not cover that id, identity answers and audits under an id of its own', async () => {
    const user = await stack.identity.createUser();
    const key = stack.identity.config.INTERNAL_ASSERTION_KEY;
    const facts = { method: 'POST', target: '/v1/auth/login', forwardedFor: '192.0.2.7', forwardedProto: 'http', clientKeyId: CLIENT_KEY.keyId };
    const forwarded = { 'x-forwarded-for': facts.forwardedFor, 'x-forwarded-proto': facts.forwardedProto, 'x-client-key-id': facts.clientKeyId };
    const login = (headers: Record<string, string>) =>
      sendRaw(stack.identityUrl, 'POST', '/v1/auth/login', { 'content-type': 'application/json', ...headers }, json({ username: user.username, password: user.password }));
    const attempts: Array<[string, Record<string, string>]> = [
      ['no assertion', { 'x-request-id': 'victim-direct-1' }],
      ['a forged assertion', { ...forwarded, 'x-request-id': 'victim-direct-2', 'x-internal-assertion': assertForwarding('not-the-internal-assertion-key-0123456789', { ...facts, requestId: 'victim-direct-2' }) }],
      ['a genuine assertion over another request id', { ...forwarded, 'x-request-id': 'victim-direct-3', 'x-internal-assertion': assertForwarding(key, { ...facts, requestId: 'gateway-made-id' }) }],
    ];
    const answered: string[] = [];
    for (const [label, headers] of attempts) {
      const res = await login(headers);
      assert.equal(res.status, 200, `${label}: ${res.body.toString()}`);
      const id = String(res.headers['x-request-id']);
      assert.match(id, UUID, `${label}: identity believed the caller's id`);
      answered.push(id);
    }
    // The control, as the gateway sends it: an assertion that covers the id is believed.
    const vouched = await login({ ...forwarded, 'x-request-id': 'gateway-made-id', 'x-internal-assertion': assertForwarding(key, { ...facts, requestId: 'gateway-made-id' }) });
    assert.equal(vouched.status, 200, vouched.body.toString());
    // Behind the gateway the id is the gateway's to echo: identity logs and audits under it, and does not repeat it.
    assert.equal(vouched.headers['x-request-id'], undefined);
    // The line is written when the answer closes, which may be after the caller has read it.
    const logged = () => Promise.resolve((stack.identity.log.lines() as Line[]).some((l) => l.req?.id === 'gateway-made-id' && l.msg === 'POST 200'));
    assert.ok(await eventually(logged, 2000, 20), 'identity did not log under the vouched id');
    assert.deepEqual(await loginRequestIds(user.id), ['gateway-made-id', ...answered].sort());
  });

  it('when a caller reaches risk directly with an X-Request-Id and no assertion, risk answers under an id of its own', async () => {
    const res = await sendRaw(stack.riskUrl, 'GET', '/v1/weather-stations/get-cities', { 'x-request-id': 'victim-risk-1' });
    assert.equal(res.status, 401);
    assert.match(String(res.headers['x-request-id']), UUID);
    // Risk's lines reach its stdout within service-kit's LOG_HOLD_MS: the request's line is there first.
    assert.ok(await eventually(() => Promise.resolve((stack.logs.risk.lines() as Line[]).some((l) => l.req?.id === res.headers['x-request-id'])), 2000, 20), 'risk did not log the request');
    assert.ok(!(stack.logs.risk.lines() as Line[]).some((l) => l.req?.id === 'victim-risk-1'));
  });
});
