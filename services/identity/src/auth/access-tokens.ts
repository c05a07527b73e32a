import { randomUUID } from 'node:crypto';
import type { Role } from '@platform/auth';
import jwt from 'jsonwebtoken';
import type { SigningKey } from './signing-key.ts';

export interface AccessTokenSubject {
  userId: string;
  username: string;
  roles: readonly Role[];
  sessionId: string;
  /** When the session began: no token of it outlives the session's absolute lifetime. */
  sessionCreatedAt: Date;
  /** The session's assurance level: 1 after the password, 2 after the second factor (CONTRACT.md part 15). */
  aal: 1 | 2;
  /** The user must show a second factor (it has one, or its roles require one): an `aal` 1 token is refused but for enrolment. */
  secondFactorRequired: boolean;
  /** The client key the session was opened under: the token carries it as `cnf.kid` (CONTRACT.md part 16); none for a direct call. */
  clientKeyId?: string | null;
}

export interface IssuedAccessToken {
  token: string;
  jti: string;
  /** Epoch seconds. */
  expiresAt: number;
}

/** Signs CONTRACT.md part 4 access tokens, with part 15's `aal` and `sfr` (second factor required) and part 16's `cnf`. */
export interface AccessTokenIssuer {
  issue(subject: AccessTokenSubject): IssuedAccessToken;
}

/**
 * An issuer over one signing key; the key object is reused for every token. A token lives `ttlS`, but never
 * past the end of its session's absolute lifetime (`sessionMaxLifetimeS` from its start): a session that
 * can no longer be refreshed has no token left either.
 */
export function createAccessTokenIssuer(options: { key: SigningKey; issuer: string; audience: string; ttlS: number; sessionMaxLifetimeS: number }): AccessTokenIssuer {
  return {
    issue(subject) {
      const jti = randomUUID();
      const iat = Math.floor(Date.now() / 1000);
      const sessionEnds = Math.floor(subject.sessionCreatedAt.getTime() / 1000) + options.sessionMaxLifetimeS;
      const expiresAt = Math.min(iat + options.ttlS, sessionEnds);
      const token = jwt.sign(
        {
          sub: subject.userId,
          username: subject.username,
          roles: subject.roles,
          sid: subject.sessionId,
          jti,
          iat,
          exp: expiresAt,
          iss: options.issuer,
          aud: options.audience,
          aal: subject.aal,
          sfr: subject.secondFactorRequired,
          // RFC 7800 confirmation: the key whose signatures alone may present this token.
          ...(subject.clientKeyId ? { cnf: { kid: subject.clientKeyId } } : {}),
        },
        options.key.privateKey,
        { algorithm: options.key.algorithm, keyid: options.key.kid },
      );
      return { token, jti, expiresAt };
    },
  };
}
