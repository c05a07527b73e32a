import assert from 'node:assert/strict';
import { parseTraceparent } from '@platform/service-kit';
import { type TestRedis, createTestRedis } from '@platform/service-kit/testing';
import { type TestGateway, send, startGateway } from './support/gateway-harness.ts';
import { signedHeaders } from './support/signing-client.ts';

const CITIES = '/v1/weather-stations/get-cities';
const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

// Without OpenTelemetry's SDK (these tests run none), the gateway continues W3C trace context itself.
describe('gateway trace context (CONTRACT.md part 12), without the OpenTelemetry SDK', () => {
  let testRedis: TestRedis;
  let gw: TestGateway;

  before(async () => {
    testRedis = await createTestRedis('gw-trace');
    gw = await startGateway({ redis: testRedis.redis });
  });
  after(async () => {
    await gw.close();
    await testRedis.close();
  });

  /** Sends a station request with these extra headers; returns what the upstream got and the gateway's line. */
  async function through(extra: Record<string, string | readonly string[]>) {
    // node:http sends an array as one header line per value.
    const headers = { ...signedHeaders('GET', CITIES, { key: gw.keys.hmac, bearer: gw.issuer.sign() }), ...extra } as unknown as Record<string, string>;
    const res = await send(gw.url, 'GET', CITIES, headers);
    assert.equal(res.status, 200, res.body.toString());
    const received = gw.risk.received.at(-1)!;
    const requestId = String(res.headers['x-request-id']);
    const line = gw.logs.lines().find((l) => (l.req as { id?: string } | undefined)?.id === requestId && l.msg === 'GET 200');
    assert.ok(line, gw.logs.text());
    return { upstream: received.headers, line };
  }

  it('when the client sends a valid traceparent, continues its trace upstream with a span of its own, flags kept, and logs its trace id', async () => {
    const { upstream, line } = await through({ traceparent: `00-${CLIENT_TRACE}-00f067aa0ba902b7-01`, tracestate: 'vendor=x' });
    const sent = parseTraceparent(upstream.traceparent);
    assert.ok(sent, String(upstream.traceparent));
    assert.equal(sent.traceId, CLIENT_TRACE);
    assert.notEqual(sent.parentId, '00f067aa0ba902b7');
    assert.equal(sent.flags, '01');
    assert.equal(upstream.tracestate, undefined);
    assert.equal(line.traceId, CLIENT_TRACE);
  });

  for (const [name, value] of [
    ['all-zero trace id', `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`],
    ['all-zero parent id', `00-${CLIENT_TRACE}-${'0'.repeat(16)}-01`],
    ['upper-case hex', `00-${CLIENT_TRACE.toUpperCase()}-00f067aa0ba902b7-01`],
    ['version ff', `ff-${CLIENT_TRACE}-00f067aa0ba902b7-01`],
    ['version 00 with a fifth field', `00-${CLIENT_TRACE}-00f067aa0ba902b7-01-extra`],
    ['a short trace id', `00-${CLIENT_TRACE.slice(2)}-00f067aa0ba902b7-01`],
    ['trailing junk', `00-${CLIENT_TRACE}-00f067aa0ba902b7-01;x=<script>`],
    ['two header lines', [`00-${CLIENT_TRACE}-00f067aa0ba902b7-01`, `00-${CLIENT_TRACE}-00f067aa0ba902b8-01`]],
    ['8 kB of a later version\'s fields', `01-${CLIENT_TRACE}-00f067aa0ba902b7-01-${'a'.repeat(8000)}`],
  ] as const) {
    it(`when the client's traceparent is invalid (${name}), starts a new trace and never passes the client's value on`, async () => {
      const { upstream, line } = await through({ traceparent: value });
      const sent = parseTraceparent(upstream.traceparent);
      assert.ok(sent, String(upstream.traceparent));
      assert.notEqual(sent.traceId, CLIENT_TRACE);
      assert.notEqual(upstream.traceparent, value);
      assert.equal(line.traceId, sent.traceId);
    });
  }

  it('when the client sends none, starts a trace (unsampled: nothing records it) and passes it on', async () => {
    const { upstream, line } = await through({});
    const sent = parseTraceparent(upstream.traceparent);
    assert.ok(sent);
    assert.equal(sent.flags, '00');
    assert.equal(line.traceId, sent.traceId);
    assert.match(String(line.traceId), /^[0-9a-f]{32}$/);
  });

  it('logs the trace id on the lines of refused requests too', async () => {
    const res = await send(gw.url, 'GET', CITIES, { 'x-idempotency-key': 'k-1', traceparent: `00-${CLIENT_TRACE}-00f067aa0ba902b7-01` });
    assert.equal(res.status, 401);
    const requestId = String(res.headers['x-request-id']);
    const lines = gw.logs.lines().filter((l) => (l.req as { id?: string } | undefined)?.id === requestId);
    assert.ok(lines.length >= 2, gw.logs.text());
    for (const line of lines) assert.equal(line.traceId, CLIENT_TRACE, JSON.stringify(line));
  });
});
