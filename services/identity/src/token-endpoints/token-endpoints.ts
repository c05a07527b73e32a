import { type Principal, isBoundElsewhere } from '@platform/auth';
import { HttpError } from '@platform/errors';
import type { components } from '@platform/client/openapi/identity';
import type { AuthServices } from '../auth/auth-services.ts';
import { type AuditContext, withActor } from '../request/audit-context.ts';
import { refreshTokenFault, refreshTokenHash } from '../sessions/refresh-token.ts';
import { type RefreshTokenRecord, findRefreshToken } from '../sessions/sessions.repository.ts';
import type { UserRecord } from '../user-records/user.ts';
import { findUserById } from '../user-records/users.repository.ts';
import { revokeAccessToken } from '../sessions/revoked-tokens.ts';

export type IntrospectionResult = components['schemas']['IntrospectionResult'];

/** What the token endpoints work with: the authentication services, and the issuer the tokens name. */
export interface TokenEndpointServices extends AuthServices {
  /** TOKEN_ISSUER: `iss` of the answers about refresh tokens, which carry none themselves. */
  issuer: string;
}

const INACTIVE: IntrospectionResult = Object.freeze({ active: false });

/**
 * The access token's principal when the token is alive: its signature, `iss`, `aud`, `exp` and claims, then
 * the revocations (logout, revoked alone, its session ended) decide; undefined for any token they refuse. A
 * 503 (the revocations being restored, Redis down) is thrown: nothing can be said of the token then.
 */
async function liveAccessToken(services: TokenEndpointServices, token: string): Promise<Principal | undefined> {
  try {
    // The operations of the second factor accept an `aal` 1 token: alive, at its level.
    return await services.verifier.verify(token, { firstFactorSuffices: true });
  } catch (err) {
    if (err instanceof HttpError && err.status === 401) return undefined;
    throw err;
  }
}

/** A refresh token a refresh would accept now, with its user; undefined when unknown or refused. */
async function liveRefreshToken(services: TokenEndpointServices, token: string): Promise<{ record: RefreshTokenRecord; user: UserRecord } | undefined> {
  const record = await findRefreshToken(services.db, refreshTokenHash(token));
  if (record === undefined || refreshTokenFault(record, services.sessionMaxLifetimeS) !== undefined) return undefined;
  const user = await findUserById(services.db, record.userId);
  return user?.status === 'ACTIVE' ? { record, user } : undefined;
}

const epochS = (date: Date): number => Math.floor(date.getTime() / 1000);

/** Looks a token up as the hint says first: an access token unless the hint names a refresh token. */
function refreshFirst(hint: string | undefined): boolean {
  return hint === 'refresh_token';
}

/**
 * RFC 7662 introspection (CONTRACT.md part 16): the token's claims while it is alive, exactly
 * `{ active: false }` for a token expired, revoked, of an ended session, malformed or unknown, and for an
 * access token of the password alone (`aal` 1) whose user must show a second factor (part 15): every operation
 * refuses it but the second factor and enrolment, which only identity serves, so to a resource server it opens
 * nothing (`active: true` would let one that reads `active` alone take a password for both factors).
 * `token_type` is RFC 6749 section 5.1's type, `Bearer`, and only an access token has one: a resource server
 * that checks it takes no refresh token for an access token. `token_use` says which of the two it is (as Ory
 * Hydra names it).
 */
export async function introspect(services: TokenEndpointServices, token: string, hint: string | undefined): Promise<IntrospectionResult> {
  const asAccess = async (): Promise<IntrospectionResult | undefined> => {
    const principal = await liveAccessToken(services, token);
    if (principal === undefined || (principal.aal < 2 && principal.secondFactorRequired)) return undefined;
    return {
      active: true,
      token_type: 'Bearer',
      token_use: 'access_token',
      sub: principal.userId,
      username: principal.username,
      sid: principal.sessionId,
      ...(principal.clientKeyId === undefined ? {} : { client_id: principal.clientKeyId }),
      iss: services.issuer,
      exp: principal.expiresAt,
      ...(principal.issuedAt === undefined ? {} : { iat: principal.issuedAt }),
      roles: [...principal.roles],
      aal: principal.aal,
    };
  };
  const asRefresh = async (): Promise<IntrospectionResult | undefined> => {
    const live = await liveRefreshToken(services, token);
    if (live === undefined) return undefined;
    const { record, user } = live;
    return {
      active: true,
      token_use: 'refresh_token',
      sub: user.id,
      username: user.username,
      sid: record.sessionId,
      ...(record.sessionClientKeyId === null ? {} : { client_id: record.sessionClientKeyId }),
      iss: services.issuer,
      exp: epochS(record.expiresAt),
      iat: epochS(record.issuedAt),
      roles: [...user.roles],
      aal: record.sessionAal,
    };
  };
  const [first, second] = refreshFirst(hint) ? [asRefresh, asAccess] : [asAccess, asRefresh];
  return (await first()) ?? (await second()) ?? INACTIVE;
}

/**
 * RFC 7009 revocation (CONTRACT.md part 16): a refresh token ends its session, an access token is revoked
 * alone. Nothing is said of the outcome: a token unknown, dead already, or bound to another client key than
 * the caller's (left alone: one client cannot end another's session) is answered like any other.
 */
export async function revoke(services: TokenEndpointServices, token: string, hint: string | undefined, audit: AuditContext): Promise<void> {
  const caller = audit.clientKeyId ?? undefined;
  const bound = (clientKeyId: string | undefined): boolean => services.tokenBinding && isBoundElsewhere({ clientKeyId }, caller);
  const asAccess = async (): Promise<boolean> => {
    // Any token that verifies, revoked or not: revoking twice is not an error, and reveals nothing.
    let principal: Principal;
    try {
      principal = await services.verifier.verify(token, { ignoreRevocation: true, firstFactorSuffices: true });
    } catch (err) {
      if (err instanceof HttpError && err.status === 401) return false;
      throw err;
    }
    if (bound(principal.clientKeyId)) return true;
    await revokeAccessToken(services, principal, {
      context: withActor(audit, principal.userId),
      event: { type: 'access_token.revoked', subjectUserId: principal.userId, details: { sessionId: principal.sessionId, tokenId: principal.tokenId } },
    });
    return true;
  };
  const asRefresh = async (): Promise<boolean> => {
    const record = await findRefreshToken(services.db, refreshTokenHash(token));
    if (record === undefined) return false;
    if (record.sessionEndedAt !== null || bound(record.sessionClientKeyId ?? undefined)) return true;
    const session = { id: record.sessionId, userId: record.userId };
    await services.sessions.transaction((_trx, ending) => ending.one(withActor(audit, record.userId), session, 'revoked'));
    return true;
  };
  const [first, second] = refreshFirst(hint) ? [asRefresh, asAccess] : [asAccess, asRefresh];
  if (!(await first())) await second();
}
