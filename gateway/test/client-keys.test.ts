import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { LOCAL_CLIENT_KEYS, parseClientKeys } from '../src/signing/client-keys.ts';

/** A fresh public key of the given type, as SPKI PEM. */
function publicPem(type: 'ed25519' | 'rsa' | 'ec' | 'ed448'): string {
  const pair =
    type === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : type === 'ec'
        ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
        : type === 'ed448'
          ? generateKeyPairSync('ed448')
          : generateKeyPairSync('ed25519');
  return pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
}

/** Runs parseClientKeys on `entries` as JSON, expects it to throw, and returns the message. */
function rejection(raw: string): string {
  let caught: unknown;
  try {
    parseClientKeys(raw);
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof Error, `expected ${raw.slice(0, 80)} to be rejected`);
  return caught.message;
}

describe('parseClientKeys', () => {
  describe('accepts', () => {
    it('an hmac-sha256 key with a secret of 16 bytes', () => {
      const keys = parseClientKeys(JSON.stringify([{ keyId: 'partner-1', alg: 'hmac-sha256', secret: '0123456789abcdef' }]));
      assert.deepEqual(keys, [{ keyId: 'partner-1', alg: 'hmac-sha256', secret: '0123456789abcdef' }]);
    });

    it('a secret of 16 UTF-8 bytes even when it has fewer characters', () => {
      const secret = 'ğüşöçıİĞ';
      assert.equal(Buffer.byteLength(secret), 16);
      const keys = parseClientKeys(JSON.stringify([{ keyId: 'tr', alg: 'hmac-sha256', secret }]));
      assert.deepEqual(keys, [{ keyId: 'tr', alg: 'hmac-sha256', secret }]);
    });

    it('"introspection" as true or false, on either algorithm (CONTRACT.md part 16), and refuses anything else', () => {
      const pem = publicPem('ed25519');
      const keys = parseClientKeys(
        JSON.stringify([
          { keyId: 'orders-api', alg: 'ed25519', publicKey: pem, introspection: true },
          { keyId: 'app', alg: 'hmac-sha256', secret: 'a-long-enough-secret', introspection: false },
        ]),
      );
      assert.deepEqual(keys, [
        { keyId: 'orders-api', alg: 'ed25519', publicKey: pem, introspection: true },
        { keyId: 'app', alg: 'hmac-sha256', secret: 'a-long-enough-secret', introspection: false },
      ]);
      for (const value of ['true', 1, null, {}]) {
        assert.equal(rejection(JSON.stringify([{ keyId: 'app', alg: 'hmac-sha256', secret: 'a-long-enough-secret', introspection: value }])), 'key "app": introspection must be true or false');
      }
    });

    it('an ed25519 key with an SPKI PEM public key', () => {
      const pem = publicPem('ed25519');
      const keys = parseClientKeys(JSON.stringify([{ keyId: 'mobile-app', alg: 'ed25519', publicKey: pem }]));
      assert.deepEqual(keys, [{ keyId: 'mobile-app', alg: 'ed25519', publicKey: pem }]);
    });

    it('several keys of both algorithms, in order, keeping only the fields of a key', () => {
      const pem = publicPem('ed25519');
      const keys = parseClientKeys(
        JSON.stringify([
          { keyId: 'A.b_c:d-1', alg: 'hmac-sha256', secret: 'a-long-enough-secret', note: 'dropped' },
          { keyId: 'k2', alg: 'ed25519', publicKey: pem, secret: 'ignored-for-ed25519' },
        ]),
      );
      assert.deepEqual(keys, [
        { keyId: 'A.b_c:d-1', alg: 'hmac-sha256', secret: 'a-long-enough-secret' },
        { keyId: 'k2', alg: 'ed25519', publicKey: pem },
      ]);
    });

    it('a keyId of 128 characters', () => {
      const keyId = 'k'.repeat(128);
      assert.equal(parseClientKeys(JSON.stringify([{ keyId, alg: 'hmac-sha256', secret: '0123456789abcdef' }]))[0]!.keyId, keyId);
    });

    it('a notAfter in RFC 3339, as epoch ms, with any offset, Feb 29 of a leap year included', () => {
      const key = { keyId: 'k', alg: 'hmac-sha256', secret: '0123456789abcdef' };
      for (const [notAfter, instant] of [
        ['2027-01-31T00:00:00Z', '2027-01-31T00:00:00.000Z'],
        ['2027-01-31T12:00:00+01:00', '2027-01-31T11:00:00.000Z'],
        ['2028-02-29T23:59:59.250-00:00', '2028-02-29T23:59:59.250Z'],
      ]) {
        assert.equal(parseClientKeys(JSON.stringify([{ ...key, notAfter }]))[0]!.notAfter, Date.parse(instant!), notAfter);
      }
    });

    it('the local default, written as JSON', () => {
      assert.deepEqual(parseClientKeys(JSON.stringify(LOCAL_CLIENT_KEYS)), [{ keyId: 'local-dev', alg: 'hmac-sha256', secret: 'local-dev-secret' }]);
    });
  });

  describe('rejects', () => {
    it('an ed25519 private key given as publicKey: the gateway must never hold a client\'s private key', () => {
      const { privateKey } = generateKeyPairSync('ed25519');
      const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      const message = rejection(JSON.stringify([{ keyId: 'leaky', alg: 'ed25519', publicKey: pem }]));
      assert.equal(message, 'key "leaky": publicKey must be a public key, not a private one');
      assert.ok(!message.includes('PRIVATE KEY-----\n'));
    });

    it('text that is not JSON, without echoing it', () => {
      const message = rejection('[{"keyId": "k", "secret": "s3cr3t-in-broken-json"');
      assert.equal(message, 'must be a JSON array of { keyId, alg, secret | publicKey, notAfter?, introspection? }');
    });

    it('an empty array', () => {
      assert.equal(rejection('[]'), 'must be a non-empty JSON array');
    });

    it('JSON that is not an array', () => {
      assert.equal(rejection(JSON.stringify({ keyId: 'k', alg: 'hmac-sha256', secret: '0123456789abcdef' })), 'must be a non-empty JSON array');
      assert.equal(rejection('"k"'), 'must be a non-empty JSON array');
      assert.equal(rejection('null'), 'must be a non-empty JSON array');
    });

    it('an entry that is not an object, naming its index', () => {
      assert.equal(rejection(JSON.stringify([{ keyId: 'ok', alg: 'hmac-sha256', secret: '0123456789abcdef' }, 'k2'])), 'entry 1 must be an object');
      assert.equal(rejection('[null]'), 'entry 0 must be an object');
    });

    it('an entry without a keyId', () => {
      assert.equal(
        rejection(JSON.stringify([{ alg: 'hmac-sha256', secret: '0123456789abcdef' }])),
        'entry 0: keyId must be 1-128 characters of [A-Za-z0-9._:-]',
      );
    });

    it('a keyId with characters outside [A-Za-z0-9._:-], empty, too long or not text', () => {
      for (const keyId of ['has space', 'slash/id', 'üml', 'quote"', '', 'k'.repeat(129), 42]) {
        assert.equal(
          rejection(JSON.stringify([{ keyId, alg: 'hmac-sha256', secret: '0123456789abcdef' }])),
          'entry 0: keyId must be 1-128 characters of [A-Za-z0-9._:-]',
          `keyId ${JSON.stringify(keyId)}`,
        );
      }
    });

    it('an unknown or missing alg, naming the key', () => {
      assert.equal(
        rejection(JSON.stringify([{ keyId: 'k', alg: 'rsa-pss-sha512', secret: '0123456789abcdef' }])),
        'key "k": alg must be hmac-sha256 or ed25519',
      );
      assert.equal(rejection(JSON.stringify([{ keyId: 'k', secret: '0123456789abcdef' }])), 'key "k": alg must be hmac-sha256 or ed25519');
      assert.equal(
        rejection(JSON.stringify([{ keyId: 'k', alg: 'HMAC-SHA256', secret: '0123456789abcdef' }])),
        'key "k": alg must be hmac-sha256 or ed25519',
      );
    });

    it('an hmac secret shorter than 16 bytes, without echoing the secret', () => {
      const message = rejection(JSON.stringify([{ keyId: 'short', alg: 'hmac-sha256', secret: 'tooShortS3cret' }]));
      assert.equal(message, 'key "short": hmac-sha256 needs a "secret" of at least 16 bytes');
      assert.ok(!message.includes('tooShortS3cret'));
      assert.ok(!message.includes('S3cret'));
    });

    it('an hmac secret of 15 bytes', () => {
      assert.equal(
        rejection(JSON.stringify([{ keyId: 'k', alg: 'hmac-sha256', secret: '0123456789abcde' }])),
        'key "k": hmac-sha256 needs a "secret" of at least 16 bytes',
      );
    });

    it('an hmac key whose secret is missing or not text', () => {
      for (const entry of [{ keyId: 'k', alg: 'hmac-sha256' }, { keyId: 'k', alg: 'hmac-sha256', secret: 1234567890123456 }]) {
        assert.equal(rejection(JSON.stringify([entry])), 'key "k": hmac-sha256 needs a "secret" of at least 16 bytes');
      }
    });

    it('an ed25519 key without a publicKey', () => {
      assert.equal(rejection(JSON.stringify([{ keyId: 'k', alg: 'ed25519' }])), 'key "k": ed25519 needs a "publicKey" in PEM');
    });

    it('an ed25519 key whose PEM is an RSA, EC or Ed448 public key', () => {
      for (const [type, name] of [
        ['rsa', 'rsa'],
        ['ec', 'ec'],
        ['ed448', 'ed448'],
      ] as const) {
        assert.equal(
          rejection(JSON.stringify([{ keyId: 'k', alg: 'ed25519', publicKey: publicPem(type) }])),
          `key "k": publicKey is ${name}, not ed25519`,
        );
      }
    });

    it('an ed25519 key whose PEM cannot be read', () => {
      const broken = '-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----\n';
      for (const publicKey of [broken, 'not a pem at all', '']) {
        assert.equal(
          rejection(JSON.stringify([{ keyId: 'k', alg: 'ed25519', publicKey }])),
          'key "k": publicKey is not a readable PEM public key',
        );
      }
    });

    it('a notAfter that names no real instant (Feb 30, Apr 31, Feb 29 of 2026, hour 24, a leap second), naming the field, not rolling it over', () => {
      const pem = publicPem('ed25519');
      for (const [notAfter, reason] of [
        ['2026-02-30T00:00:00Z', 'day 30 is not a day of 2026-02 (01-28)'],
        ['2026-04-31T00:00:00Z', 'day 31 is not a day of 2026-04 (01-30)'],
        ['2026-02-29T00:00:00Z', 'day 29 is not a day of 2026-02 (01-28)'],
        ['2026-01-01T24:00:00Z', 'hour 24 is not 00-23'],
        ['2026-01-01T23:60:00Z', 'minute 60 is not 00-59'],
        ['2016-12-31T23:59:60Z', 'second 60 (a leap second) is not accepted; write :59 or the next minute'],
        ['2026-01-01T00:00:00+24:00', 'offset hour 24 is not 00-23'],
      ]) {
        const expected = `key "k": notAfter must be an RFC 3339 date-time, e.g. 2027-01-31T00:00:00Z: ${reason}`;
        assert.equal(rejection(JSON.stringify([{ keyId: 'k', alg: 'hmac-sha256', secret: '0123456789abcdef', notAfter }])), expected);
        assert.equal(rejection(JSON.stringify([{ keyId: 'k', alg: 'ed25519', publicKey: pem, notAfter }])), expected);
      }
    });

    it('a notAfter that is not RFC 3339 text, without echoing it', () => {
      for (const notAfter of ['2027-01-31', 'tomorrow', 1798675200, null, 'S3cret-pasted-here']) {
        const message = rejection(JSON.stringify([{ keyId: 'k', alg: 'hmac-sha256', secret: '0123456789abcdef', notAfter }]));
        assert.match(message, /^key "k": notAfter must be an RFC 3339 date-time, e\.g\. 2027-01-31T00:00:00Z/, String(notAfter));
        assert.ok(!message.includes('S3cret'));
      }
    });

    it('a keyId that appears twice, even with different algorithms', () => {
      const message = rejection(
        JSON.stringify([
          { keyId: 'dup', alg: 'hmac-sha256', secret: 'first-secret-value-1' },
          { keyId: 'other', alg: 'hmac-sha256', secret: 'other-secret-value-2' },
          { keyId: 'dup', alg: 'ed25519', publicKey: publicPem('ed25519') },
        ]),
      );
      assert.equal(message, 'keyId "dup" appears twice');
      assert.ok(!message.includes('first-secret-value-1'));
    });

    it('a bad entry after good ones, naming it and no secret of the others', () => {
      const message = rejection(
        JSON.stringify([
          { keyId: 'good', alg: 'hmac-sha256', secret: 'goodS3cretValue-0001' },
          { keyId: 'bad', alg: 'hmac-sha256', secret: 'tooShortS3cret' },
        ]),
      );
      assert.equal(message, 'key "bad": hmac-sha256 needs a "secret" of at least 16 bytes');
      assert.ok(!message.includes('S3cret'));
    });
  });
});
