import assert from 'node:assert/strict';
import { assertForwarding } from '@platform/service-kit';
import { clientOrigin, clientResponseHeaders, upstreamRequestHeaders } from '../src/proxy/forwarded-headers.ts';

describe('forwarded headers', () => {
  const assertionKey = 'test-internal-assertion-key-0123456789abcdef';
  const facts = { requestId: 'r1', keyId: 'k1', clientAddress: '10.0.0.7', proto: 'https' as const, method: 'GET', target: '/v1/x?y=1', bodyLength: 0, assertionKey, traceparent: '00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01' };

  it('when admission checked the bearer token, the assertion (v3) vouches for it and covers the Authorization header sent', () => {
    const out = upstreamRequestHeaders({ authorization: 'Bearer t', host: 'api.example.com' }, { ...facts, checkedBearer: true });
    const assertion = out['x-internal-assertion'] ?? '';
    const t = Number(/^v3;t=(\d+);/.exec(assertion)?.[1]);
    const vouched = { method: 'GET', target: '/v1/x?y=1', forwardedFor: '10.0.0.7', forwardedProto: 'https', clientKeyId: 'k1', requestId: 'r1' };
    assert.equal(assertion, assertForwarding(assertionKey, { ...vouched, checkedAuthorization: 'Bearer t' }, t));
    // Without the check it vouches for no token.
    assert.match(upstreamRequestHeaders({ authorization: 'Bearer t' }, facts)['x-internal-assertion'] ?? '', /^v2;/);
  });

  it('sends the upstream only allow-listed client headers plus the gateway\'s own', () => {
    const out = upstreamRequestHeaders(
      {
        accept: 'application/json',
        authorization: 'Bearer t',
        'x-idempotency-key': 'i1',
        connection: 'close',
        expect: '100-continue',
        'x-forwarded-for': '1.2.3.4',
        'x-client-key-id': 'forged',
        'x-request-id': 'client-chosen',
        signature: 'sig1=:AA==:',
        'x-internal-assertion': 'v1;t=1;mac=forged',
        traceparent: '00-11111111111111111111111111111111-2222222222222222-01',
        tracestate: 'vendor=forged',
        host: 'api.example.com',
      },
      facts,
    );
    const { 'x-internal-assertion': assertion, ...rest } = out;
    // The gateway vouches for exactly what it sends (CONTRACT.md part 10); a client's copy is dropped.
    const t = Number(/^v2;t=(\d+);/.exec(assertion ?? '')?.[1]);
    assert.ok(Math.abs(t - Date.now() / 1000) < 5, String(assertion));
    assert.equal(assertion, assertForwarding(assertionKey, { method: 'GET', target: '/v1/x?y=1', forwardedFor: '10.0.0.7', forwardedProto: 'https', clientKeyId: 'k1', requestId: 'r1' }, t));
    assert.deepEqual(rest, {
      accept: 'application/json',
      authorization: 'Bearer t',
      'x-idempotency-key': 'i1',
      'x-request-id': 'r1',
      'x-client-key-id': 'k1',
      'x-forwarded-for': '10.0.0.7',
      'x-forwarded-proto': 'https',
      // The gateway's own continuation of the trace, never the client's header as sent.
      traceparent: facts.traceparent,
    });
  });

  it('leaves the trace context to OpenTelemetry\'s instrumentation when the checks name none', () => {
    const out = upstreamRequestHeaders({ traceparent: '00-11111111111111111111111111111111-2222222222222222-01' }, { ...facts, traceparent: undefined });
    assert.equal(out.traceparent, undefined);
  });

  it('states the body length for bodies and for POST/PUT/PATCH without one', () => {
    assert.equal(upstreamRequestHeaders({}, { ...facts, method: 'POST', bodyLength: 12 })['content-length'], '12');
    assert.equal(upstreamRequestHeaders({}, { ...facts, method: 'POST', bodyLength: 0 })['content-length'], '0');
    assert.equal(upstreamRequestHeaders({}, { ...facts, method: 'GET', bodyLength: 0 })['content-length'], undefined);
  });

  it('returns the client only allow-listed response headers', () => {
    assert.deepEqual(clientResponseHeaders({ 'content-type': 'application/json', location: '/x', 'retry-after': '5', 'set-cookie': ['a=1'], 'x-powered-by': 'Express', server: 'x' }), {
      'content-type': 'application/json',
      location: '/x',
      'retry-after': '5',
    });
  });

  describe('clientOrigin', () => {
    const socket = { remoteAddress: '192.0.2.1', encrypted: false };

    it('with no trusted proxy, is the socket peer, whatever X-Forwarded-* claims', () => {
      assert.deepEqual(clientOrigin(socket, { 'x-forwarded-for': '6.6.6.6', 'x-forwarded-proto': 'https' }, 0), { address: '192.0.2.1', proto: 'http' });
    });

    it('behind N trusted proxies, is the address the outermost one saw and the scheme the nearest reports', () => {
      const headers = { 'x-forwarded-for': '6.6.6.6, 203.0.113.5, 10.0.0.2', 'x-forwarded-proto': 'http, https' };
      assert.deepEqual(clientOrigin(socket, headers, 1), { address: '10.0.0.2', proto: 'https' });
      assert.deepEqual(clientOrigin(socket, headers, 2), { address: '203.0.113.5', proto: 'https' });
      assert.deepEqual(clientOrigin(socket, {}, 1), { address: '192.0.2.1', proto: 'http' });
    });
  });
});
