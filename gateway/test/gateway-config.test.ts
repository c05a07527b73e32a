import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '@platform/service-kit';
import { gatewayConfigProblems, gatewayConfigSpec } from '../src/config.ts';

describe('gateway configuration', () => {
  it('in local, needs nothing: the local-dev key, local upstreams and localhost CORS', () => {
    const config = loadConfig(gatewayConfigSpec, {});
    assert.deepEqual(config.GATEWAY_CLIENT_KEYS, [{ keyId: 'local-dev', alg: 'hmac-sha256', secret: 'local-dev-secret' }]);
    assert.equal(config.IDENTITY_URL, 'http://127.0.0.1:8081');
    assert.equal(config.RISK_URL, 'http://127.0.0.1:8082');
    assert.deepEqual(config.CORS_ORIGINS, ['http://localhost:3000']);
    assert.equal(config.TRUSTED_PROXY_HOPS, 0);
  });

  for (const appEnv of ['test', 'prod']) {
    it(`in ${appEnv}, refuses to start without client keys, upstreams, JWKS, Redis, the internal assertion key and the token issuer, naming each`, () => {
      let caught: unknown;
      try {
        loadConfig(gatewayConfigSpec, { APP_ENV: appEnv });
      } catch (err) {
        caught = err;
      }
      assert.ok(caught instanceof ConfigError);
      const named = caught.problems.map((p) => p.split(' ')[0]).sort();
      assert.deepEqual(named, ['IDENTITY_JWKS_URL', 'IDENTITY_URL', 'INTERNAL_ASSERTION_KEY', 'REDIS_URL', 'RISK_URL', 'TOKEN_ISSUER']);
      // The client keys come from the variable or from a file: one of them, checked across keys.
      const keysFromNowhere = { APP_ENV: appEnv as 'test' | 'prod', GATEWAY_CLIENT_KEYS: [], GATEWAY_CLIENT_KEYS_FILE: '' };
      assert.match(gatewayConfigProblems(keysFromNowhere).join(), /GATEWAY_CLIENT_KEYS is required in APP_ENV=\w+ unless GATEWAY_CLIENT_KEYS_FILE/);
      assert.deepEqual(gatewayConfigProblems({ ...keysFromNowhere, GATEWAY_CLIENT_KEYS_FILE: '/etc/gateway/client-keys/client-keys.json' }), []);
    });
  }

  it('reads notAfter of a client key as an RFC 3339 date-time, and refuses anything else, impossible dates included', () => {
    const key = { keyId: 'partner', alg: 'hmac-sha256', secret: 'a-partner-secret-of-32-bytes-abc' };
    const parsed = loadConfig(gatewayConfigSpec, { GATEWAY_CLIENT_KEYS: JSON.stringify([{ ...key, notAfter: '2027-01-31T12:00:00+01:00' }]) });
    assert.equal(parsed.GATEWAY_CLIENT_KEYS[0]?.notAfter, Date.parse('2027-01-31T11:00:00Z'));
    for (const notAfter of ['2027-01-31', 'tomorrow', 1798675200, '2027-13-45T00:00:00Z', '2026-02-30T00:00:00Z', '2026-01-01T24:00:00Z']) {
      assert.throws(() => loadConfig(gatewayConfigSpec, { GATEWAY_CLIENT_KEYS: JSON.stringify([{ ...key, notAfter }]) }), /notAfter must be an RFC 3339 date-time/);
    }
  });

  describe('GATEWAY_RATE_LIMITS', () => {
    it('defaults to 10,000 requests per second for every key', () => {
      const { GATEWAY_RATE_LIMITS: limits } = loadConfig(gatewayConfigSpec, {});
      assert.deepEqual(limits.policyFor('anyone'), { name: 'default', limit: 10_000, windowS: 1 });
    });

    it('gives a named key its own policy and every other key the "*" one', () => {
      const { GATEWAY_RATE_LIMITS: limits } = loadConfig(gatewayConfigSpec, {
        GATEWAY_RATE_LIMITS: '{"*":{"limit":100,"windowS":60},"partner-a":{"limit":5,"windowS":1}}',
      });
      assert.deepEqual(limits.policyFor('partner-a'), { name: 'partner-a', limit: 5, windowS: 1 });
      assert.deepEqual(limits.policyFor('partner-b'), { name: 'default', limit: 100, windowS: 60 });
    });

    for (const [raw, problem] of [
      ['not json', /JSON object/],
      ['[]', /JSON object/],
      ['{"a":{"limit":1,"windowS":1}}', /"\*" entry/],
      ['{"*":{"limit":0,"windowS":1}}', /limit must be an integer/],
      ['{"*":{"limit":1.5,"windowS":1}}', /limit must be an integer/],
      ['{"*":{"limit":10,"windowS":0}}', /windowS must be an integer/],
      ['{"*":{"limit":10,"windowS":"1"}}', /windowS must be an integer/],
      ['{"*":{"limit":10,"windowS":1,"burst":5}}', /unknown field "burst"/],
      ['{"*":{"limit":10,"windowS":1},"bad key!":{"limit":1,"windowS":1}}', /is not a key id/],
    ] as const) {
      it(`refuses ${raw}, saying why`, () => {
        assert.throws(() => loadConfig(gatewayConfigSpec, { GATEWAY_RATE_LIMITS: raw }), (err: unknown) => err instanceof ConfigError && problem.test(err.problems.join('\n')));
      });
    }
  });

  it(`in prod, has no CORS origin unless told`, () => {
    const config = loadConfig(gatewayConfigSpec, {
      APP_ENV: 'prod',
      TOKEN_ISSUER: 'https://api.example.com',
      REDIS_URL: 'redis://redis:6379/0',
      IDENTITY_URL: 'http://identity:8081',
      RISK_URL: 'http://risk:8082',
      IDENTITY_JWKS_URL: 'http://identity:8081/.well-known/jwks.json',
      GATEWAY_CLIENT_KEYS: JSON.stringify([{ keyId: 'partner', alg: 'hmac-sha256', secret: 'a-partner-secret-of-32-bytes-abc' }]),
      INTERNAL_ASSERTION_KEY: 'an-internal-assertion-key-of-32-bytes',
    });
    assert.deepEqual(config.CORS_ORIGINS, []);
  });
});
