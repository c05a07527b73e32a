import assert from 'node:assert/strict';
import { ConfigError, type ConfigSpec, describeConfig, env, loadConfig } from '../src/config.ts';
import { identityConfigProblems, identityConfigSpec } from '../../../services/identity/src/config.ts';
import { gatewayConfigSpec } from '../../../gateway/src/config.ts';

type Source = Record<string, string | undefined>;

/** Loads `source` against `spec`, expects a ConfigError, and returns its problems. */
function problemsOf(spec: ConfigSpec, source: Source): readonly string[] {
  let caught: unknown;
  try {
    loadConfig(spec, source);
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof ConfigError, `expected a ConfigError, got ${String(caught)}`);
  return caught.problems;
}

/** The key a problem is about: its first word. */
function keyOf(problem: string): string {
  return problem.split(' ')[0]!;
}

/** A complete production environment for the identity service, every value distinctive. */
function identityProdEnv(): Source {
  return {
    APP_ENV: 'prod',
    IDENTITY_DATABASE_URL: 'postgres://identity:db-pass-7781@db.internal:5432/identity',
    REDIS_URL: 'rediss://:redis-pass-5512@redis.internal:6380/1',
    BOOTSTRAP_ADMIN_USERNAME: 'root@example.org',
    BOOTSTRAP_ADMIN_PASSWORD: 'admin-pass-9923',
    JWT_PRIVATE_KEY: '-----BEGIN PRIVATE KEY-----\njwt-key-4410\n-----END PRIVATE KEY-----',
    MAIL_PROVIDER: 'http',
    MAIL_HTTP_URL: 'https://mail.example.org/send',
    SMS_PROVIDER: 'log',
    SMS_HTTP_TOKEN: 'sms-token-3307',
    SMS_CODE_HMAC_KEY: 'sms-hmac-key-6161',
    INTERNAL_ASSERTION_KEY: 'internal-assertion-key-8842-long-enough',
    SECOND_FACTOR_ENCRYPTION_KEY: 'second-factor-key-5150-long-enough-for-aes',
    TOKEN_ISSUER: 'https://api.example.org',
  };
}

const prodClientKeys = JSON.stringify([{ keyId: 'partner-1', alg: 'hmac-sha256', secret: 'client-secret-0042-long-enough' }]);

/** A complete production environment for the gateway. */
function gatewayProdEnv(): Source {
  return {
    APP_ENV: 'prod',
    REDIS_URL: 'redis://:redis-pass-6620@redis.internal:6379/0',
    IDENTITY_URL: 'http://identity.internal:8081',
    RISK_URL: 'https://risk.internal',
    IDENTITY_JWKS_URL: 'http://identity.internal:8081/.well-known/jwks.json',
    GATEWAY_CLIENT_KEYS: prodClientKeys,
    INTERNAL_ASSERTION_KEY: 'internal-assertion-key-8842-long-enough',
    TOKEN_ISSUER: 'https://api.example.org',
  };
}

/** Every identity key without a plain default: in test and prod each must be set. */
const IDENTITY_REQUIRED = [
  'IDENTITY_DATABASE_URL',
  'REDIS_URL',
  'BOOTSTRAP_ADMIN_USERNAME',
  'BOOTSTRAP_ADMIN_PASSWORD',
  'JWT_PRIVATE_KEY',
  'MAIL_PROVIDER',
  'SMS_PROVIDER',
  'SMS_CODE_HMAC_KEY',
  'INTERNAL_ASSERTION_KEY',
  'SECOND_FACTOR_ENCRYPTION_KEY',
  'TOKEN_ISSUER',
];

/** Every gateway key without a plain default. */
// GATEWAY_CLIENT_KEYS or GATEWAY_CLIENT_KEYS_FILE: one of the two, a rule across keys (gateway-config.test.ts).
const GATEWAY_REQUIRED = ['REDIS_URL', 'IDENTITY_URL', 'RISK_URL', 'IDENTITY_JWKS_URL', 'INTERNAL_ASSERTION_KEY', 'TOKEN_ISSUER'];
/** Secrets that may be absent outside local: optional by nature, or required by a rule across keys. */
// REDIS_PASSWORD: a cluster without AUTH needs none; one Redis takes its password in REDIS_URL.
const OPTIONAL_SECRETS = ['SMS_HTTP_TOKEN', 'OTEL_EXPORTER_OTLP_HEADERS', 'GATEWAY_CLIENT_KEYS', 'REDIS_PASSWORD'];

describe('loadConfig', () => {
  describe('with APP_ENV=local', () => {
    it('when the environment is empty, the gateway gets the local defaults of CONTRACT.md part 9', () => {
      const config = loadConfig(gatewayConfigSpec, {});
      assert.equal(config.APP_ENV, 'local');
      assert.equal(config.GATEWAY_PORT, 8080);
      assert.deepEqual(config.GATEWAY_CLIENT_KEYS, [{ keyId: 'local-dev', alg: 'hmac-sha256', secret: 'local-dev-secret' }]);
      assert.equal(config.REDIS_URL, 'redis://127.0.0.1:6379/0');
      assert.equal(config.IDENTITY_URL, 'http://127.0.0.1:8081');
      assert.equal(config.RISK_URL, 'http://127.0.0.1:8082');
      assert.equal(config.IDENTITY_JWKS_URL, 'http://127.0.0.1:8081/.well-known/jwks.json');
      assert.deepEqual(config.CORS_ORIGINS, ['http://localhost:3000']);
      assert.equal(config.SIGNATURE_MAX_SKEW_S, 300);
      assert.equal(config.GATEWAY_BODY_LIMIT_BYTES, 102_400);
      assert.equal(config.LOG_LEVEL, 'info');
      assert.equal(config.HOST, '127.0.0.1');
    });

    it('when the environment is empty, identity gets the local defaults of CONTRACT.md part 9', () => {
      const config = loadConfig(identityConfigSpec, {});
      assert.equal(config.APP_ENV, 'local');
      assert.equal(config.IDENTITY_PORT, 8081);
      assert.equal(config.BOOTSTRAP_ADMIN_USERNAME, 'admin@example.com');
      assert.equal(config.BOOTSTRAP_ADMIN_PASSWORD, 'local-admin-password');
      assert.equal(config.SMS_PROVIDER, 'log');
      assert.equal(config.MAIL_PROVIDER, 'log');
      assert.deepEqual(config.RESET_REDIRECT_ALLOWLIST, ['http://localhost:3000']);
      assert.equal(config.AUTH_MAX_FAILED_LOGINS, 5);
      assert.equal(config.LOGIN_FAILURES_PER_MIN, 100);
      assert.equal(config.IDENTITY_DATABASE_URL, 'postgres://postgres@127.0.0.1:5432/identity');
      assert.equal(config.JWT_PRIVATE_KEY, '');
      assert.equal(config.OPENAPI_VALIDATE_RESPONSES, false);
      assert.equal(config.BCRYPT_COST, 10);
    });

    it('when APP_ENV is local, blank or padded, it is local', () => {
      for (const appEnv of ['local', '', '  ', ' local ']) {
        const config = loadConfig(gatewayConfigSpec, { APP_ENV: appEnv });
        assert.equal(config.APP_ENV, 'local', `for APP_ENV="${appEnv}"`);
        assert.equal(config.GATEWAY_PORT, 8080);
      }
    });
  });

  describe('with APP_ENV=prod or test', () => {
    for (const appEnv of ['prod', 'test']) {
      it(`when APP_ENV=${appEnv} and nothing else is set, identity refuses naming every key without a plain default at once`, () => {
        let caught: unknown;
        try {
          loadConfig(identityConfigSpec, { APP_ENV: appEnv });
        } catch (err) {
          caught = err;
        }
        assert.ok(caught instanceof ConfigError);
        assert.ok(caught instanceof Error);
        assert.equal(caught.name, 'ConfigError');
        assert.deepEqual(caught.problems.map(keyOf).sort(), [...IDENTITY_REQUIRED].sort());
        for (const problem of caught.problems) assert.match(problem, new RegExp(`^[A-Z_]+ is required in APP_ENV=${appEnv}: .+`));
        assert.ok(
          caught.problems.includes(`BOOTSTRAP_ADMIN_PASSWORD is required in APP_ENV=${appEnv}: Password of the bootstrap ADMIN`),
          'the problem carries the key\'s one-line description',
        );
        assert.equal(caught.message, `Invalid configuration:\n  - ${caught.problems.join('\n  - ')}`);
        for (const key of IDENTITY_REQUIRED) assert.ok(caught.message.includes(`- ${key} is required`), `${key} missing from the message`);
      });

      it(`when APP_ENV=${appEnv} and nothing else is set, the gateway refuses naming every key without a plain default at once`, () => {
        let caught: unknown;
        try {
          loadConfig(gatewayConfigSpec, { APP_ENV: appEnv });
        } catch (err) {
          caught = err;
        }
        assert.ok(caught instanceof ConfigError);
        assert.deepEqual(caught.problems.map(keyOf).sort(), [...GATEWAY_REQUIRED].sort());
        for (const key of GATEWAY_REQUIRED) assert.ok(caught.message.includes(`- ${key} is required in APP_ENV=${appEnv}`), `${key} missing`);
      });
    }

    it('with REDIS_CLUSTER_NODES, REDIS_URL is not required, and the seeds and password are read', () => {
      const { REDIS_URL: _unused, ...source } = identityProdEnv();
      const config = loadConfig(identityConfigSpec, { ...source, REDIS_CLUSTER_NODES: 'redis-0.internal:6379, redis-1.internal:6379', REDIS_PASSWORD: 'cluster-pass-1' });
      assert.equal(config.REDIS_URL, undefined);
      assert.deepEqual(config.REDIS_CLUSTER_NODES, ['redis-0.internal:6379', 'redis-1.internal:6379']);
      assert.equal(config.REDIS_PASSWORD, 'cluster-pass-1');
      assert.deepEqual(problemsOf(identityConfigSpec, { ...source, REDIS_CLUSTER_NODES: 'redis-0.internal' }), ['REDIS_CLUSTER_NODES must be comma-separated host:port seeds, got "redis-0.internal"']);
    });

    it('refuses a REDIS_KEY_PREFIX with a brace: it would be the hash tag of every key, one cluster slot for all', () => {
      assert.deepEqual(problemsOf(identityConfigSpec, { ...identityProdEnv(), REDIS_KEY_PREFIX: '{prod}:' }), ['REDIS_KEY_PREFIX must not contain { or } (they would make every key one Redis Cluster slot)']);
    });

    it('every secret of both services must be set outside local, except the optional SMS token and collector headers', () => {
      for (const [spec, required] of [
        [identityConfigSpec, IDENTITY_REQUIRED],
        [gatewayConfigSpec, GATEWAY_REQUIRED],
      ] as const) {
        const secrets = Object.entries(spec as ConfigSpec)
          .filter(([, field]) => field.secret === true)
          .map(([name]) => name)
          .filter((name) => !OPTIONAL_SECRETS.includes(name));
        for (const name of secrets) assert.ok((required as readonly string[]).includes(name), `${name} has a default outside local`);
      }
    });

    it('when prod names every required key, loads, and keys with a plain default take it rather than the local one', () => {
      const config = loadConfig(gatewayConfigSpec, gatewayProdEnv());
      assert.equal(config.APP_ENV, 'prod');
      assert.deepEqual(config.GATEWAY_CLIENT_KEYS, [{ keyId: 'partner-1', alg: 'hmac-sha256', secret: 'client-secret-0042-long-enough' }]);
      assert.equal(config.RISK_URL, 'https://risk.internal');
      assert.deepEqual(config.CORS_ORIGINS, []);
      assert.equal(config.GATEWAY_PORT, 8080);

      const identity = loadConfig(identityConfigSpec, identityProdEnv());
      assert.equal(identity.APP_ENV, 'prod');
      assert.deepEqual(identity.RESET_REDIRECT_ALLOWLIST, []);
      assert.equal(identity.MAIL_PROVIDER, 'http');
      assert.equal(identity.SMS_HTTP_TOKEN, 'sms-token-3307');
    });

    it('when a required value is only whitespace, it counts as missing', () => {
      const problems = problemsOf(gatewayConfigSpec, { ...gatewayProdEnv(), RISK_URL: '   ' });
      assert.deepEqual(problems, ['RISK_URL is required in APP_ENV=prod: Base URL of the risk service upstream']);
    });
  });

  describe('with a bad value', () => {
    it('when APP_ENV is not local, test or prod, names APP_ENV and the value', () => {
      const problems = problemsOf(gatewayConfigSpec, { APP_ENV: 'staging' });
      assert.equal(problems[0], 'APP_ENV must be one of local, test, prod, got "staging"');
      // No local defaults apply to an environment that does not exist.
      assert.ok(problems.includes('INTERNAL_ASSERTION_KEY is required in APP_ENV=staging: ' + String(gatewayConfigSpec.INTERNAL_ASSERTION_KEY.doc)), problems.join('\n'));
    });

    it('when APP_ENV has the wrong case, it is not accepted', () => {
      const problems = problemsOf(gatewayConfigSpec, { ...gatewayProdEnv(), APP_ENV: 'PROD' });
      assert.deepEqual(problems, ['APP_ENV must be one of local, test, prod, got "PROD"']);
    });

    it('when an integer is not an integer, names the key', () => {
      for (const raw of ['abc', '1.5', '12abc', '0x10']) {
        const problems = problemsOf(gatewayConfigSpec, { SIGNATURE_MAX_SKEW_S: raw });
        assert.deepEqual(problems, [`SIGNATURE_MAX_SKEW_S must be an integer, got "${raw}"`]);
      }
    });

    it('when an integer is out of its range, names the key and the range', () => {
      assert.deepEqual(problemsOf(identityConfigSpec, { BCRYPT_COST: '3' }), ['BCRYPT_COST must be between 4 and 15, got 3']);
      assert.deepEqual(problemsOf(identityConfigSpec, { AUTH_MAX_FAILED_LOGINS: '0' }), ['AUTH_MAX_FAILED_LOGINS must be between 1 and 100, got 0']);
    });

    it('when a port is out of range, names the key', () => {
      assert.deepEqual(problemsOf(gatewayConfigSpec, { GATEWAY_PORT: '70000' }), ['GATEWAY_PORT must be between 0 and 65535, got 70000']);
      assert.deepEqual(problemsOf(identityConfigSpec, { IDENTITY_PORT: '-1' }), ['IDENTITY_PORT must be between 0 and 65535, got -1']);
    });

    it('when a boolean is not one, names the key', () => {
      assert.deepEqual(problemsOf(identityConfigSpec, { OPENAPI_VALIDATE_RESPONSES: 'maybe' }), ['OPENAPI_VALIDATE_RESPONSES must be true or false']);
    });

    it('reads true/1/yes and false/0/no as booleans, in any case', () => {
      for (const [raw, value] of [
        ['true', true],
        ['TRUE', true],
        ['1', true],
        ['Yes', true],
        ['false', false],
        ['0', false],
        ['no', false],
        ['NO', false],
      ] as const) {
        assert.equal(loadConfig(identityConfigSpec, { OPENAPI_VALIDATE_RESPONSES: raw }).OPENAPI_VALIDATE_RESPONSES, value, raw);
      }
    });

    it('when an enum value is not one of its values, names the key and the values', () => {
      assert.deepEqual(problemsOf(gatewayConfigSpec, { LOG_LEVEL: 'loud' }), [
        'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent',
      ]);
      assert.deepEqual(problemsOf(identityConfigSpec, { SMS_PROVIDER: 'twilio' }), ['SMS_PROVIDER must be one of log, http']);
    });

    it('when a URL has the wrong scheme or is not a URL, names the key', () => {
      assert.deepEqual(problemsOf(gatewayConfigSpec, { IDENTITY_URL: 'ftp://identity.internal' }), ['IDENTITY_URL must use one of http:, https:']);
      assert.deepEqual(problemsOf(gatewayConfigSpec, { RISK_URL: 'risk.internal:8082/x' }), ['RISK_URL must use one of http:, https:']);
      assert.deepEqual(problemsOf(gatewayConfigSpec, { RISK_URL: 'not a url' }), ['RISK_URL must be an absolute URL']);
    });

    it('the export delay of the spans (OTEL_BSP_SCHEDULE_DELAY, which the trace SDK no longer reads itself): a positive integer of ms, 5000 unset', () => {
      assert.equal(loadConfig(gatewayConfigSpec, {}).OTEL_BSP_SCHEDULE_DELAY, 5000);
      assert.equal(loadConfig(identityConfigSpec, { OTEL_BSP_SCHEDULE_DELAY: '200' }).OTEL_BSP_SCHEDULE_DELAY, 200);
      assert.deepEqual(problemsOf(gatewayConfigSpec, { OTEL_BSP_SCHEDULE_DELAY: 'soon' }), ['OTEL_BSP_SCHEDULE_DELAY must be an integer, got "soon"']);
      assert.deepEqual(problemsOf(gatewayConfigSpec, { OTEL_BSP_SCHEDULE_DELAY: '0' }), ['OTEL_BSP_SCHEDULE_DELAY must be between 1 and 3600000, got 0']);
    });

    it('when several keys are bad, reports every one of them at once', () => {
      const problems = problemsOf(gatewayConfigSpec, { GATEWAY_PORT: 'x', LOG_LEVEL: 'loud', IDENTITY_URL: 'ftp://a', DRAIN_TIMEOUT_MS: '-1' });
      assert.deepEqual(problems.map(keyOf).sort(), ['DRAIN_TIMEOUT_MS', 'GATEWAY_PORT', 'IDENTITY_URL', 'LOG_LEVEL']);
    });

    it('when a secret is malformed, names the key without echoing its text', () => {
      const problems = problemsOf(identityConfigSpec, { ...identityProdEnv(), IDENTITY_DATABASE_URL: 'not-a-url-s3cr3t' });
      assert.deepEqual(problems, ['IDENTITY_DATABASE_URL must be an absolute URL']);
      for (const problem of problems) assert.ok(!problem.includes('s3cr3t'), problem);
    });

    it('when a secret URL has the wrong scheme, names the key without echoing the password in it', () => {
      const problems = problemsOf(identityConfigSpec, { ...identityProdEnv(), REDIS_URL: 'http://:s3cr3t@redis.internal:6379' });
      assert.equal(problems.length, 1);
      assert.equal(problems[0], 'REDIS_URL must use one of redis:, rediss:');
      assert.ok(!problems[0]!.includes('s3cr3t'));
    });

    it('when the client keys are malformed, names GATEWAY_CLIENT_KEYS without echoing the secret', () => {
      const keys = JSON.stringify([{ keyId: 'partner-1', alg: 'hmac-sha256', secret: 'tooShortS3cret' }]);
      const problems = problemsOf(gatewayConfigSpec, { ...gatewayProdEnv(), GATEWAY_CLIENT_KEYS: keys });
      assert.equal(problems.length, 1);
      assert.equal(problems[0], 'GATEWAY_CLIENT_KEYS key "partner-1": hmac-sha256 needs a "secret" of at least 16 bytes');
      assert.ok(!problems[0]!.includes('tooShortS3cret'));
    });

    it('when a secret integer is malformed, does not echo it', () => {
      const spec = { PIN: env.integer('A numeric secret', { min: 0, max: 9999 }, { secret: true }) };
      const problems = problemsOf(spec, { PIN: 's3cr3t' });
      assert.deepEqual(problems, ['PIN must be an integer, got "[redacted]"']);
    });
  });

  describe('with values set', () => {
    it('values from the environment override the defaults, trimmed', () => {
      const config = loadConfig(identityConfigSpec, {
        IDENTITY_PORT: ' 9091 ',
        BOOTSTRAP_ADMIN_USERNAME: 'ops@example.org',
        BOOTSTRAP_ADMIN_PASSWORD: 'another-password',
        SMS_PROVIDER: 'http',
        SMS_HTTP_URL: 'https://sms.example.org/send',
        RESET_REDIRECT_ALLOWLIST: 'https://app.example.org, https://admin.example.org,,',
        AUTH_MAX_FAILED_LOGINS: '3',
        LOGIN_FAILURES_PER_MIN: '250',
        LOG_LEVEL: 'debug',
        OPENAPI_VALIDATE_RESPONSES: 'true',
      });
      assert.equal(config.IDENTITY_PORT, 9091);
      assert.equal(config.BOOTSTRAP_ADMIN_USERNAME, 'ops@example.org');
      assert.equal(config.BOOTSTRAP_ADMIN_PASSWORD, 'another-password');
      assert.equal(config.SMS_PROVIDER, 'http');
      assert.equal(config.SMS_HTTP_URL, 'https://sms.example.org/send');
      assert.deepEqual(config.RESET_REDIRECT_ALLOWLIST, ['https://app.example.org', 'https://admin.example.org']);
      assert.equal(config.AUTH_MAX_FAILED_LOGINS, 3);
      assert.equal(config.LOGIN_FAILURES_PER_MIN, 250);
      assert.equal(config.LOG_LEVEL, 'debug');
      assert.equal(config.OPENAPI_VALIDATE_RESPONSES, true);
      // Untouched keys keep their defaults.
      assert.equal(config.MAIL_PROVIDER, 'log');
    });

    it('the gateway port and client keys can be overridden in local', () => {
      const config = loadConfig(gatewayConfigSpec, { GATEWAY_PORT: '9090', GATEWAY_CLIENT_KEYS: prodClientKeys });
      assert.equal(config.GATEWAY_PORT, 9090);
      assert.deepEqual(config.GATEWAY_CLIENT_KEYS, [{ keyId: 'partner-1', alg: 'hmac-sha256', secret: 'client-secret-0042-long-enough' }]);
    });

    it('a blank value falls back to the default', () => {
      const config = loadConfig(gatewayConfigSpec, { GATEWAY_PORT: '  ', CORS_ORIGINS: '' });
      assert.equal(config.GATEWAY_PORT, 8080);
      assert.deepEqual(config.CORS_ORIGINS, ['http://localhost:3000']);
    });
  });
});

describe('describeConfig', () => {
  it('redacts every secret of identity and shows every other key as loaded', () => {
    const source = identityProdEnv();
    const config = loadConfig(identityConfigSpec, source);
    const described = describeConfig(identityConfigSpec, config);
    const secrets = [
      'IDENTITY_DATABASE_URL',
      'REDIS_URL',
      'REDIS_PASSWORD',
      'BOOTSTRAP_ADMIN_PASSWORD',
      'JWT_PRIVATE_KEY',
      'SMS_HTTP_TOKEN',
      'SMS_CODE_HMAC_KEY',
      'INTERNAL_ASSERTION_KEY',
      'OTEL_EXPORTER_OTLP_HEADERS',
      'SECOND_FACTOR_ENCRYPTION_KEY',
    ];
    assert.deepEqual(Object.keys(described).sort(), ['APP_ENV', ...Object.keys(identityConfigSpec)].sort());
    assert.equal(described.APP_ENV, 'prod');
    for (const [key, value] of Object.entries(described)) {
      if (secrets.includes(key)) assert.equal(value, '[redacted]', key);
      else assert.deepEqual(value, (config as Record<string, unknown>)[key], key);
    }
    assert.equal(described.BOOTSTRAP_ADMIN_USERNAME, 'root@example.org');
    assert.equal(described.MAIL_HTTP_URL, 'https://mail.example.org/send');
    const text = JSON.stringify(described);
    for (const leak of ['db-pass-7781', 'redis-pass-5512', 'admin-pass-9923', 'jwt-key-4410', 'sms-token-3307', 'second-factor-key-5150']) {
      assert.ok(!text.includes(leak), `${leak} is printed`);
    }
  });

  it('redacts the gateway client keys and Redis URL and shows the rest', () => {
    const config = loadConfig(gatewayConfigSpec, gatewayProdEnv());
    const described = describeConfig(gatewayConfigSpec, config);
    assert.equal(described.GATEWAY_CLIENT_KEYS, '[redacted]');
    assert.equal(described.REDIS_URL, '[redacted]');
    assert.equal(described.IDENTITY_URL, 'http://identity.internal:8081');
    assert.equal(described.GATEWAY_PORT, 8080);
    assert.deepEqual(described.CORS_ORIGINS, []);
    const text = JSON.stringify(described);
    assert.ok(!text.includes('client-secret-0042'));
    assert.ok(!text.includes('redis-pass-6620'));
  });

  it('redacts the local defaults of secrets too', () => {
    const described = describeConfig(gatewayConfigSpec, loadConfig(gatewayConfigSpec, {}));
    assert.equal(described.GATEWAY_CLIENT_KEYS, '[redacted]');
    assert.ok(!JSON.stringify(described).includes('local-dev-secret'));
  });
});

describe('identityConfigProblems', () => {
  it('when SMS_PROVIDER=http has no SMS_HTTP_URL, names SMS_HTTP_URL', () => {
    const config = loadConfig(identityConfigSpec, { SMS_PROVIDER: 'http' });
    assert.deepEqual(identityConfigProblems(config), ['SMS_HTTP_URL is required when SMS_PROVIDER=http']);
  });

  it('when MAIL_PROVIDER=http has no MAIL_HTTP_URL, names MAIL_HTTP_URL', () => {
    const config = loadConfig(identityConfigSpec, { MAIL_PROVIDER: 'http' });
    assert.deepEqual(identityConfigProblems(config), ['MAIL_HTTP_URL is required when MAIL_PROVIDER=http']);
  });

  it('a provider URL must be http or https', () => {
    assert.throws(
      () => loadConfig(identityConfigSpec, { SMS_PROVIDER: 'http', SMS_HTTP_URL: 'javascript:alert(1)' }),
      (err: unknown) => err instanceof ConfigError && err.problems.some((p) => p.startsWith('SMS_HTTP_URL must use one of http:, https:')),
    );
  });

  it('when both providers are http without URLs, names both at once', () => {
    const config = loadConfig(identityConfigSpec, { MAIL_PROVIDER: 'http', SMS_PROVIDER: 'http' });
    assert.deepEqual(identityConfigProblems(config), [
      'MAIL_HTTP_URL is required when MAIL_PROVIDER=http',
      'SMS_HTTP_URL is required when SMS_PROVIDER=http',
    ]);
  });

  it('when the http providers have their URLs, or the providers log, finds nothing', () => {
    assert.deepEqual(identityConfigProblems(loadConfig(identityConfigSpec, {})), []);
    const config = loadConfig(identityConfigSpec, {
      MAIL_PROVIDER: 'http',
      MAIL_HTTP_URL: 'https://mail.example.org/send',
      SMS_PROVIDER: 'http',
      SMS_HTTP_URL: 'https://sms.example.org/send',
    });
    assert.deepEqual(identityConfigProblems(config), []);
  });
});
