import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '@platform/service-kit';
import { gatewayConfigSpec } from '../src/config.ts';

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
    it(`in ${appEnv}, refuses to start without client keys, upstreams, JWKS, Redis and the internal assertion key, naming each`, () => {
      let caught: unknown;
      try {
        loadConfig(gatewayConfigSpec, { APP_ENV: appEnv });
      } catch (err) {
        caught = err;
      }
      assert.ok(caught instanceof ConfigError);
      const named = caught.problems.map((p) => p.split(' ')[0]).sort();
      assert.deepEqual(named, ['GATEWAY_CLIENT_KEYS', 'IDENTITY_JWKS_URL', 'IDENTITY_URL', 'INTERNAL_ASSERTION_KEY', 'REDIS_URL', 'RISK_URL']);
    });
  }

  it(`in prod, has no CORS origin unless told`, () => {
    const config = loadConfig(gatewayConfigSpec, {
      APP_ENV: 'prod',
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
