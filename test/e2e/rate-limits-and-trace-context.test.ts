import assert from 'node:assert/strict';
import { signedHeaders } from '../../gateway/test/support/signing-client.ts';
import { type Answer, sendRaw } from '../reliability/support/raw-http.ts';
import { type Stack, startStack } from './support/stack.ts';

const LOCAL_KEY = { keyId: 'local-dev', alg: 'hmac-sha256' as const, secret: 'local-dev-secret' };
const OTHER_KEY = { keyId: 'e2e-other', alg: 'hmac-sha256' as const, secret: 'e2e-other-secret-0123456789' };
/**
 * The key the forged flood names, with a window of an hour: its quota moves only by its own admitted
 * requests, never because an earlier request slid out of a short window while the test ran.
 */
const FLOOD_KEY = { keyId: 'e2e-flooded', alg: 'hmac-sha256' as const, secret: 'e2e-flooded-secret-0123456789' };
const CITIES = '/v1/weather-stations/get-cities';
const LIMIT = 40;

/** The JSON lines a process wrote whose request id is `id`. */
function linesOf(output: string, id: string): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes(id))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

// CONTRACT.md part 12 through the real stack: two gateway replicas sharing one Redis, identity and risk,
// all as their own processes, tracing without the OpenTelemetry SDK (the default).
describe('rate limits and trace context through the real stack (two gateway replicas)', function () {
  this.timeout(120_000);
  let stack: Stack;
  let replicas: string[];
  let token: string;

  before(async () => {
    stack = await startStack(
      { mailUrl: 'http://127.0.0.1:9/mail', smsUrl: 'http://127.0.0.1:9/sms' },
      {
        LOG_LEVEL: 'info',
        // One user's token sent under three keys, to count each key's quota: bound, it would be refused under
        // the two keys that did not log in (CONTRACT.md part 16, tested in token-endpoints.test.ts).
        TOKEN_BINDING: 'off',
        // Every lookup reaches risk, whose request line is awaited: a hit of the gateway's station cache never
        // would (CONTRACT.md part 17, test/e2e/station-cache.test.ts).
        GATEWAY_CACHE_MB: '0',
        GATEWAY_CLIENT_KEYS: JSON.stringify([LOCAL_KEY, OTHER_KEY, FLOOD_KEY]),
        GATEWAY_RATE_LIMITS: JSON.stringify({
          'e2e-other': { limit: LIMIT, windowS: 120 },
          'e2e-flooded': { limit: 1000, windowS: 3600 },
          '*': { limit: 100_000, windowS: 1 },
        }),
      },
    );
    replicas = [stack.gatewayUrl, await stack.startGatewayReplica()];
    const body = Buffer.from(JSON.stringify(stack.admin));
    const login = await sendRaw(stack.gatewayUrl, 'POST', '/v1/auth/login', signedHeaders('POST', '/v1/auth/login', { key: LOCAL_KEY, body }), body);
    assert.equal(login.status, 200, login.body.toString());
    token = String(login.json().accessToken);
  });
  after(async () => {
    await stack?.stop();
  });

  const cities = (gateway: string, key = OTHER_KEY, headers: Record<string, string> = {}): Promise<Answer> =>
    sendRaw(gateway, 'GET', CITIES, { ...signedHeaders('GET', CITIES, { key, bearer: token }), ...headers });

  it('shares one key\'s limit between the replicas: of 120 racing requests spread over both, exactly the limit is admitted', async () => {
    const answers = await Promise.all(Array.from({ length: 3 * LIMIT }, (_, i) => cities(replicas[i % 2]!)));
    const statuses = answers.map((a) => a.status);
    assert.equal(statuses.filter((s) => s === 200).length, LIMIT, JSON.stringify(statuses));
    assert.equal(statuses.filter((s) => s === 429).length, 2 * LIMIT);
    for (const refused of answers.filter((a) => a.status === 429)) {
      assert.equal(refused.json().message, 'Rate limit exceeded');
      assert.ok(Number(refused.headers['retry-after']) >= 1);
      assert.equal(refused.headers['ratelimit-policy'], `"e2e-other";q=${LIMIT};w=120`);
      assert.match(String(refused.headers.ratelimit), /^"e2e-other";r=0;t=\d+$/);
    }
    // Another key, on either replica, is untouched.
    for (const gateway of replicas) assert.equal((await cities(gateway, LOCAL_KEY)).status, 200);
  });

  it('spends nobody\'s quota on an unsigned or forged flood', async () => {
    const remainingOf = (answer: Answer) => Number(/^"e2e-flooded";r=(\d+);t=\d+$/.exec(String(answer.headers.ratelimit))?.[1]);
    const before = await cities(replicas[0]!, FLOOD_KEY);
    assert.equal(before.status, 200);
    const remaining = remainingOf(before);
    assert.equal(remaining, 999, String(before.headers.ratelimit));
    // Both halves name the key whose quota is watched, on both replicas.
    const flood = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        i % 2 === 0
          ? sendRaw(replicas[(i / 2) % 2]!, 'GET', CITIES, { 'x-idempotency-key': `flood-${i}`, 'signature-input': `sig1=("@method");keyid="${FLOOD_KEY.keyId}"`, signature: 'sig1=:AAAA:' })
          : sendRaw(replicas[((i - 1) / 2) % 2]!, 'GET', CITIES, signedHeaders('GET', CITIES, { key: { ...FLOOD_KEY, secret: 'a-guessed-secret-0123456789' }, bearer: token })),
      ),
    );
    assert.ok(flood.every((a) => a.status === 401));
    const after = await cities(replicas[1]!, FLOOD_KEY);
    // Only the signed request before counted: the hour-long window lets nothing slide out meanwhile.
    assert.equal(remainingOf(after), remaining - 1, String(after.headers.ratelimit));
  });

  it('writes the client\'s trace id on the request line of the gateway and of the service behind it', async () => {
    const traceId = 'b7ad6b7169203331b7ad6b7169203331';
    const res = await cities(replicas[0]!, LOCAL_KEY, { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
    assert.equal(res.status, 200);
    const id = String(res.headers['x-request-id']);
    // The lines are written as the answers finish: give the processes' pipes a moment.
    let lines: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 50 && lines.length < 2; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      lines = linesOf(stack.output(), id).filter((l) => l.msg === 'GET 200');
    }
    assert.deepEqual(lines.map((l) => l.service).sort(), ['gateway', 'risk']);
    for (const line of lines) assert.equal(line.traceId, traceId);
  });

  it('without a traceparent, the gateway starts a trace that the service\'s line names too', async () => {
    const res = await cities(replicas[1]!, LOCAL_KEY);
    const id = String(res.headers['x-request-id']);
    let lines: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 50 && lines.length < 2; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      lines = linesOf(stack.output(), id).filter((l) => l.msg === 'GET 200');
    }
    assert.equal(lines.length, 2, stack.output().slice(-3000));
    assert.match(String(lines[0]!.traceId), /^[0-9a-f]{32}$/);
    assert.equal(lines[0]!.traceId, lines[1]!.traceId);
  });
});
