import assert from 'node:assert/strict';
import { createPublicKey } from 'node:crypto';
import { generateSigningKeyPem, signingKeyFromPem, verificationKeyFromPem } from '../src/auth/signing-key.ts';

/** The RSA key of RFC 7638 section 3.1, whose thumbprint the RFC gives. */
const RFC_7638_KEY = createPublicKey({
  format: 'jwk',
  key: {
    kty: 'RSA',
    e: 'AQAB',
    n:
      '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W' +
      '-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08q' +
      'NLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw',
  },
})
  .export({ format: 'pem', type: 'spki' })
  .toString();

/** A P-256 key and the JWKS entry identity published for it before the kid came from jose. */
const EC_KEY = `-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE9CE1pFpNWj6E/0RzORRbJP75Q8gX
I+Cgq3Q9O/knv6J7IHZptIE3XlRX6a0HygXETuoRbXzC+BUdWapY3RF9OA==
-----END PUBLIC KEY-----
`;
const EC_JWK = {
  kty: 'EC',
  crv: 'P-256',
  x: '9CE1pFpNWj6E_0RzORRbJP75Q8gXI-Cgq3Q9O_knv6I',
  y: 'eyB2abSBN15UV-mtB8oFxE7qEW18wvgVHVmqWN0RfTg',
  kid: 'MHhoO-7lgK6JGai3Bqyfrs3h1NFT5vb3COqYFUjxZyY',
  alg: 'ES256',
  use: 'sig',
};

// Tokens in flight carry the kid of the key that signed them: a kid that changed for the same key would
// log everybody out at the next deploy.
describe('signing key ids (RFC 7638 thumbprints)', () => {
  it('the RSA key of RFC 7638 gets the thumbprint the RFC gives', async () => {
    assert.equal((await verificationKeyFromPem(RFC_7638_KEY)).kid, 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs');
  });

  it('a known P-256 key keeps the kid and the JWKS entry it had', async () => {
    const key = await verificationKeyFromPem(EC_KEY);
    assert.equal(key.kid, EC_JWK.kid);
    assert.equal(key.algorithm, 'ES256');
    assert.deepEqual(key.jwk, EC_JWK);
  });

  it('a signing key has the kid of its public half', async () => {
    const signing = await signingKeyFromPem(generateSigningKeyPem());
    const publicPem = signing.publicKey.export({ format: 'pem', type: 'spki' }).toString();
    assert.equal(signing.kid, (await verificationKeyFromPem(publicPem)).kid);
  });
});
