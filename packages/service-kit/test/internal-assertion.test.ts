import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import request from 'supertest';
import {
  CALLER_GONE_REASON,
  DEADLINE_MESSAGE,
  type ForwardedFacts,
  answerBudgetMs,
  assertForwarding,
  createBaseApp,
  createMetrics,
  finishApp,
  gatewayDeadline,
  gatewayRequestId,
  requestOrigin,
  trustForwardingOnlyFromGateway,
} from '../src/index.ts';
import { captureLogger } from '../src/testing/index.ts';

const KEY = 'test-internal-assertion-key-0123456789abcdef';

describe('the internal assertion (CONTRACT.md part 10)', () => {
  const log = captureLogger('service');
  const app = createBaseApp({ logger: log.logger, metrics: createMetrics('test'), checks: [], lifecycle: { draining: false }, requestIdFrom: gatewayRequestId(KEY) });
  app.use(trustForwardingOnlyFromGateway(KEY, log.logger));
  app.all('/v1/things/{*rest}', (req, res) => {
    res.json(requestOrigin(req));
  });
  finishApp(app);

  const target = '/v1/things/42?x=1';
  const facts: ForwardedFacts = { method: 'POST', target, forwardedFor: '203.0.113.9', forwardedProto: 'https', clientKeyId: 'partner-1', requestId: 'gateway-id-1' };
  const forwarded = (assertion: string, overrides: Record<string, string> = {}) => ({
    'x-forwarded-for': facts.forwardedFor,
    'x-forwarded-proto': facts.forwardedProto,
    'x-client-key-id': facts.clientKeyId,
    'x-request-id': 'gateway-id-1',
    'x-internal-assertion': assertion,
    ...overrides,
  });
  /** What a gateway before v2 sent: the same facts but the request id, under `v1`. */
  const assertV1 = (key: string, f: ForwardedFacts, nowS = Math.floor(Date.now() / 1000)) => {
    const base = ['v1', String(nowS), f.method, f.target, f.forwardedFor, f.forwardedProto, f.clientKeyId].join('\n');
    return `v1;t=${nowS};mac=${createHmac('sha256', key).update(base).digest('base64url')}`;
  };
  /**
   * The id the service handled the request under: its access line's (an answer behind the gateway does not
   * echo it, the gateway's answer does), which a direct caller's answer echoes too.
   */
  const requestIdOf = async (headers: Record<string, string>) => {
    const before = log.lines().length;
    const res = await request(app).post(target).set(headers).expect(200);
    // The line is written when the answer closes, which may be just after the caller has read it.
    for (let waited = 0; waited < 2000 && !log.lines().slice(before).some((l) => l.msg === 'POST 200'); waited += 10) await new Promise((r) => setTimeout(r, 10));
    const id = (log.lines().slice(before).findLast((l) => l.msg === 'POST 200')?.req as { id?: string } | undefined)?.id;
    assert.equal(typeof id, 'string', 'no access line');
    if (res.headers['x-request-id'] !== undefined) assert.equal(res.headers['x-request-id'], id);
    return String(id);
  };
  const originOf = async (headers: Record<string, string>, method = 'POST', path = target) =>
    (await request(app)[method === 'POST' ? 'post' : 'get'](path).set(headers).expect(200)).body as { address: string; clientKeyId?: string };

  it('when the gateway vouches for the request, the forwarded address and client key are believed', async () => {
    assert.deepEqual(await originOf(forwarded(assertForwarding(KEY, facts))), { address: '203.0.113.9', clientKeyId: 'partner-1' });
  });

  it('when there is no assertion, the socket peer is the caller and there is no client key, whatever the headers say', async () => {
    const { 'x-internal-assertion': _dropped, ...headers } = forwarded('');
    const origin = await originOf(headers);
    assert.equal(origin.clientKeyId, undefined);
    assert.match(origin.address, /127\.0\.0\.1$/);
  });

  it('when the assertion is forged, stale, from another key or for another request, nothing forwarded is believed, and it is logged', async () => {
    const now = Math.floor(Date.now() / 1000);
    const cases: Array<[string, Record<string, string>, string?, string?]> = [
      ['malformed', forwarded('v1;t=1;mac=nope')],
      ['another key', forwarded(assertForwarding('another-internal-assertion-key-0123456789', facts))],
      // Two seconds past the 30 s either way: the cases are checked one after another, and a second that
      // ticks over meanwhile must not bring one back within the window (a CI run saw 31 s ahead believed).
      ['32 s old', forwarded(assertForwarding(KEY, facts, now - 32))],
      ['32 s ahead', forwarded(assertForwarding(KEY, facts, now + 32))],
      ['another address', forwarded(assertForwarding(KEY, facts), { 'x-forwarded-for': '198.51.100.1' })],
      ['another client key', forwarded(assertForwarding(KEY, facts), { 'x-client-key-id': 'partner-2' })],
      ['another scheme', forwarded(assertForwarding(KEY, facts), { 'x-forwarded-proto': 'http' })],
      ['another method', forwarded(assertForwarding(KEY, facts)), 'GET'],
      ['another target', forwarded(assertForwarding(KEY, facts)), 'POST', '/v1/things/43?x=1'],
      ['another request id', forwarded(assertForwarding(KEY, facts), { 'x-request-id': 'chosen-by-the-caller' })],
      ['no request id', forwarded(assertForwarding(KEY, facts), { 'x-request-id': '' })],
    ];
    for (const [label, headers, method, path] of cases) {
      const before = log.lines().filter((l) => l.msg === 'internal assertion refused: forwarded address and client key ignored').length;
      const origin = await originOf(headers, method, path);
      assert.equal(origin.clientKeyId, undefined, label);
      assert.match(origin.address, /127\.0\.0\.1$/, label);
      const after = log.lines().filter((l) => l.msg === 'internal assertion refused: forwarded address and client key ignored').length;
      assert.equal(after, before + 1, `${label}: not logged`);
    }
  });

  it('when valid at the edges of its 30 s, is believed', async () => {
    const now = Math.floor(Date.now() / 1000);
    for (const issued of [now - 29, now + 29]) {
      assert.equal((await originOf(forwarded(assertForwarding(KEY, facts, issued)))).clientKeyId, 'partner-1');
    }
  });

  it('when the gateway vouches for the request, its X-Request-Id is the request\'s id; else the service makes its own', async () => {
    assert.equal(await requestIdOf(forwarded(assertForwarding(KEY, facts))), 'gateway-id-1');
    const { 'x-internal-assertion': _dropped, ...unvouched } = forwarded('');
    for (const headers of [unvouched, forwarded(assertForwarding(KEY, facts), { 'x-request-id': 'chosen-by-the-caller' }), forwarded(assertForwarding('another-internal-assertion-key-0123456789', facts))]) {
      assert.match(await requestIdOf(headers), /^[0-9a-f-]{36}$/);
    }
  });

  it('when an older gateway vouches with v1 (no request id in it), the address and client key are believed, the request id is not', async () => {
    const headers = forwarded(assertV1(KEY, facts));
    assert.deepEqual(await originOf(headers), { address: '203.0.113.9', clientKeyId: 'partner-1' });
    assert.match(await requestIdOf(headers), /^[0-9a-f-]{36}$/);
    assert.equal((await originOf(forwarded(assertV1(KEY, facts), { 'x-client-key-id': 'partner-2' }))).clientKeyId, undefined);
  });

  it('when the gateway vouches for the request, the answer carries no security header or X-Request-Id the gateway drops, only Cache-Control; any other caller gets them all', async () => {
    const dropped = ['x-request-id', 'x-content-type-options', 'content-security-policy', 'x-frame-options', 'referrer-policy', 'cross-origin-opener-policy'];
    const vouched = await request(app).post(target).set(forwarded(assertForwarding(KEY, facts))).expect(200);
    for (const name of dropped) assert.equal(vouched.headers[name], undefined, name);
    assert.equal(vouched.headers['cache-control'], 'no-store');
    const { 'x-internal-assertion': _dropped, ...unvouched } = forwarded('');
    for (const headers of [unvouched, forwarded(assertForwarding('another-internal-assertion-key-0123456789', facts)), forwarded(assertV1(KEY, facts))]) {
      const res = await request(app).post(target).set(headers).expect(200);
      for (const name of dropped) assert.ok(res.headers[name] !== undefined, name);
      assert.equal(res.headers['cache-control'], 'no-store');
    }
  });
});

describe('the gateway\'s deadline under its assertion (d, CONTRACT.md part 3: a 504 means nothing was changed)', () => {
  const log = captureLogger('service');
  const OWN_DEADLINE_MS = 8000;
  const app = createBaseApp({
    logger: log.logger,
    metrics: createMetrics('test'),
    checks: [],
    lifecycle: { draining: false },
    requestDeadlineMs: OWN_DEADLINE_MS,
    requestIdFrom: gatewayRequestId(KEY),
    deadlineFrom: gatewayDeadline(KEY),
  });
  app.use(trustForwardingOnlyFromGateway(KEY, log.logger));
  let handled = 0;
  app.post('/v1/things/{*rest}', (_req, res) => {
    handled += 1;
    // The time the request has left, as its transactions and password checks see it.
    res.json({ budgetMs: answerBudgetMs() });
  });
  finishApp(app);

  const target = '/v1/things/7';
  const facts = (deadlineAtMs: number | undefined): ForwardedFacts => ({ method: 'POST', target, forwardedFor: '203.0.113.9', forwardedProto: 'https', clientKeyId: 'partner-1', requestId: 'gateway-id-2', deadlineAtMs });
  const headers = (assertion: string) => ({ 'x-forwarded-for': '203.0.113.9', 'x-forwarded-proto': 'https', 'x-client-key-id': 'partner-1', 'x-request-id': 'gateway-id-2', 'x-internal-assertion': assertion });
  const budgetUnder = async (assertion: string) => (await request(app).post(target).set(headers(assertion)).expect(200)).body.budgetMs as number;

  it('when the gateway needs the answer sooner than the service\'s own deadline, the request\'s deadline ends then', async () => {
    const budget = await budgetUnder(assertForwarding(KEY, facts(Date.now() + 4000)));
    assert.ok(budget <= 4000 && budget > 3000, String(budget));
  });

  it('when the deadline is not a whole number of milliseconds (a time read from performance.now()), it is sent and believed as its whole milliseconds', async () => {
    const fractional = Date.now() + 4000.75;
    const assertion = assertForwarding(KEY, facts(fractional));
    assert.match(assertion, new RegExp(`;d=${Math.floor(fractional)};mac=`));
    const budget = await budgetUnder(assertion);
    assert.ok(budget <= 4000 && budget > 3000, String(budget));
  });

  it('when the service\'s own deadline is sooner, or no deadline is sent, the service\'s own holds', async () => {
    for (const deadline of [Date.now() + 60_000, undefined]) {
      const budget = await budgetUnder(assertForwarding(KEY, facts(deadline)));
      assert.ok(budget <= OWN_DEADLINE_MS && budget > OWN_DEADLINE_MS - 1000, `${deadline}: ${budget}`);
    }
  });

  it('when the request is read after the time the gateway needed it answered by, it is answered 503 at once, its handler never runs, and the log says why', async () => {
    for (const late of [Date.now() - 5000, Date.now()]) {
      const before = handled;
      const res = await request(app).post(target).set(headers(assertForwarding(KEY, facts(late)))).send({ a: 1 }).expect(503);
      assert.deepEqual([res.body.status, res.body.message, res.body.path], [503, DEADLINE_MESSAGE, target]);
      assert.equal(res.headers['retry-after'] !== undefined, true);
      assert.equal(res.headers.connection, 'close');
      assert.equal(handled, before, 'the handler ran');
    }
    await new Promise((r) => setTimeout(r, 50));
    const lines = log.lines().filter((l) => l.msg === 'POST 503');
    assert.ok(lines.length >= 2 && lines.every((l) => l.level === 'warn' && l.reason === CALLER_GONE_REASON), JSON.stringify(lines));
  });

  it('when the deadline is moved, taken off or added on the way, the assertion is not believed and the service\'s own deadline holds', async () => {
    const signed = assertForwarding(KEY, facts(Date.now() + 3000));
    const moved = signed.replace(/;d=(\d+);/, (_m, d: string) => `;d=${Number(d) - 2500};`);
    const takenOff = signed.replace(/;d=\d+;/, ';');
    const added = assertForwarding(KEY, facts(undefined)).replace(';mac=', `;d=${Date.now() + 1500};mac=`);
    for (const [label, assertion] of [['moved', moved], ['taken off', takenOff], ['added', added]] as const) {
      const before = log.lines().filter((l) => l.msg === 'internal assertion refused: forwarded address and client key ignored').length;
      const budget = await budgetUnder(assertion);
      assert.ok(budget > OWN_DEADLINE_MS - 1000, `${label}: ${budget}`);
      const after = log.lines().filter((l) => l.msg === 'internal assertion refused: forwarded address and client key ignored').length;
      assert.equal(after, before + 1, `${label}: not logged as refused`);
    }
    for (const malformed of ['v2;t=1;d=soon;mac=x', 'v2;t=1;d=;mac=x', `v2;t=1;d=${'9'.repeat(16)};mac=x`]) {
      assert.ok((await budgetUnder(malformed)) > OWN_DEADLINE_MS - 1000, malformed);
    }
  });

  it('when a caller reaches the service directly, a deadline it claims is not taken', async () => {
    const res = await request(app).post(target).set({ 'x-internal-assertion': `v2;t=${Math.floor(Date.now() / 1000)};d=${Date.now() - 5000};mac=${'A'.repeat(43)}` }).expect(200);
    assert.ok(res.body.budgetMs > OWN_DEADLINE_MS - 1000);
  });
});
