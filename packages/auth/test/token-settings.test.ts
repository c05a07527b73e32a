import assert from 'node:assert/strict';
import { loadConfig } from '@platform/service-kit';
import { parseTokenIssuer, tokenSettingsSpec } from '../src/token-settings.ts';

describe('TOKEN_ISSUER and TOKEN_BINDING (CONTRACT.md part 16)', () => {
  it('takes the gateway\'s public origin: https, or http on loopback only', () => {
    for (const origin of ['https://api.example.com', 'https://api.example.com:8443', 'http://127.0.0.1:8080', 'http://localhost:8080', 'http://api.localhost', 'http://[::1]:8080']) {
      assert.equal(parseTokenIssuer(origin), origin);
    }
  });

  it('refuses what an OAuth client could not match with the URL it discovered: a path, a slash, a query, plain http elsewhere, a URN', () => {
    for (const [raw, reason] of [
      ['https://api.example.com/', /origin alone/],
      ['https://api.example.com/identity', /origin alone/],
      ['https://api.example.com?x=1', /origin alone/],
      ['https://API.example.com', /origin alone/],
      ['http://api.example.com', /https/],
      ['urn:identity-risk-platform:identity', /https/],
      ['api.example.com', /absolute URL/],
    ] as const) {
      assert.throws(() => parseTokenIssuer(raw), reason, raw);
    }
  });

  it('is required outside local, defaults to the local gateway in local, and binding is on unless turned off', () => {
    assert.throws(() => loadConfig(tokenSettingsSpec, { APP_ENV: 'prod' }), /TOKEN_ISSUER/);
    const local = loadConfig(tokenSettingsSpec, { APP_ENV: 'local' });
    assert.equal(local.TOKEN_ISSUER, 'http://127.0.0.1:8080');
    assert.equal(local.TOKEN_BINDING, 'on');
    assert.equal(loadConfig(tokenSettingsSpec, { APP_ENV: 'prod', TOKEN_ISSUER: 'https://api.example.com', TOKEN_BINDING: 'off' }).TOKEN_BINDING, 'off');
    assert.throws(() => loadConfig(tokenSettingsSpec, { APP_ENV: 'local', TOKEN_BINDING: 'maybe' }), /TOKEN_BINDING/);
  });
});
