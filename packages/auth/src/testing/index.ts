import { type KeyObject, generateKeyPairSync, randomUUID } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from '@platform/service-kit';
import jwt from 'jsonwebtoken';
import type { Jwks } from '../key-source.ts';
import { ALL_BUCKETS, ledgerKey, tokenKey } from '../revocations/buckets.ts';
import { revocationExpiry } from '../token-lifetime.ts';
import type { Role } from '../roles.ts';

/** Claims a test token may override; everything else gets a valid default. */
export interface TestTokenClaims {
  sub?: string;
  username?: string;
  roles?: Role[];
  sid?: string;
  jti?: string;
  iss?: string;
  aud?: string;
  /** Seconds from now until `exp`; negative for an expired token. */
  expiresInS?: number;
  /** `aal` and `sfr` (CONTRACT.md part 15), left out when not given, as tokens of earlier versions are. */
  aal?: 1 | 2;
  sfr?: boolean;
  /** `cnf` (CONTRACT.md part 16): the client key the token is bound to; left out when not given. */
  cnf?: unknown;
}

/** An ES256 token issuer for tests of token consumers (gateway, risk): signs tokens and serves its JWKS. */
export interface TestIssuer {
  kid: string;
  issuer: string;
  audience: string;
  privateKey: KeyObject;
  jwks: Jwks;
  /** A signed access token with CONTRACT.md part 4 claims. */
  sign(claims?: TestTokenClaims): string;
  /** Serves the JWKS on 127.0.0.1 at a random port; `close()` stops it. */
  serveJwks(): Promise<{ url: string; requests: () => number; close: () => Promise<void> }>;
}

/** Makes a key pair and an issuer around it. */
export function createTestIssuer(issuer = 'http://127.0.0.1:8080', audience = 'urn:test:api'): TestIssuer {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const kid = `test-${randomUUID()}`;
  const jwks: Jwks = { keys: [{ ...publicKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' }] };
  return {
    kid,
    issuer,
    audience,
    privateKey,
    jwks,
    sign(claims = {}) {
      const now = Math.floor(Date.now() / 1000);
      return jwt.sign(
        {
          sub: claims.sub ?? randomUUID(),
          username: claims.username ?? 'someone@example.com',
          roles: claims.roles ?? ['STANDARD_USER'],
          sid: claims.sid ?? randomUUID(),
          jti: claims.jti ?? randomUUID(),
          iss: claims.iss ?? issuer,
          aud: claims.aud ?? audience,
          iat: now,
          exp: now + (claims.expiresInS ?? 900),
          ...(claims.aal === undefined ? {} : { aal: claims.aal }),
          ...(claims.sfr === undefined ? {} : { sfr: claims.sfr }),
          ...(claims.cnf === undefined ? {} : { cnf: claims.cnf }),
        },
        privateKey,
        { algorithm: 'ES256', keyid: kid },
      );
    },
    async serveJwks() {
      let requests = 0;
      const server: Server = createServer((_req, res) => {
        requests += 1;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(jwks));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      return {
        url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
        requests: () => requests,
        close: () => new Promise<void>((resolve) => server.close(() => resolve())),
      };
    },
  };
}

/**
 * Makes `redis` (under its key prefix) a new environment rather than a Redis that lost its data (CONTRACT.md
 * part 13): every revocation bucket open and born at the epoch, as identity leaves them once re-seeded, and
 * each of `ledgers` (other slots' ledgers: the gateway's client keys', `replayBornKey`) born at the epoch.
 * Tests that run without an identity process, or whose first request must not meet a loss, start here.
 */
export async function freshEnvironment(redis: Redis, ledgers: readonly string[] = []): Promise<void> {
  await Promise.all([
    ...ALL_BUCKETS.map((bucket) => redis.hset(ledgerKey(bucket), 'born', '0', 'ready', '1')),
    ...ledgers.map((ledger) => redis.hset(ledger, 'born', '0')),
  ]);
}

/** The keys of the revocations, for tests that inspect or break them (buckets.ts). */
export { ALL_BUCKETS, BUCKET_SCRIPTS, ledgerKey, revocationBucket, sessionKey, stampKey, tokenKey } from '../revocations/buckets.ts';

/**
 * Puts one access token on the blacklist as identity's logout does (until `revocationExpiry` of its `exp`),
 * without a writer: for tests of verifiers that run without identity.
 */
export async function blacklistToken(redis: Redis, token: { tokenId: string; sessionId: string }, expiresAt: number): Promise<void> {
  await redis.set(tokenKey(token), '1', 'EXAT', revocationExpiry(expiresAt));
}
