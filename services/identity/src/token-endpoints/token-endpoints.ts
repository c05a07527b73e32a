import { type Principal, isBoundElsewhere } from '@platform/auth';
import { HttpError } from '@platform/errors';
import type { components } from '@platform/client/openapi/identity';
import type { AuthServices } from '../auth/auth-services.ts';
import { type AuditContext, withActor } from '../request/audit-context.ts';
import { refreshTokenHash } from '../sessions/refresh-token.ts';
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

/** A refresh token as the record holds it, with its session and user; undefined when unknown. */
interface RefreshTokenState {
  sessionId: string;
  userId: string;
  username: string;
  roles: Principal['roles'];
  userStatus: string;
  expiresAt: Date;
  issuedAt: Date;
  usedAt: Date | null;
  revokedAt: Date | null;
  sessionEndedAt: Date | null;
  sessionCreatedAt: Date;
  sessionAal: 1 | 2;
  clientKeyId: string | null;
}

async function refreshTokenState(services: TokenEndpointServices, token: string): Promise<RefreshTokenState | undefined> {
  return (await services
    .db('refresh_tokens as t')
    .join('sessions as s', 's.id', 't.session_id')
    .join('users as u', 'u.id', 's.user_id')
    .where('t.token_hash', refreshTokenHash(token))
    .first(
      't.session_id as sessionId',
      's.user_id as userId',
      'u.username',
      'u.roles',
      'u.status as userStatus',
      't.expires_at as expiresAt',
      't.created_at as issuedAt',
      't.used_at as usedAt',
      't.revoked_at as revokedAt',
      's.revoked_at as sessionEndedAt',
      's.created_at as sessionCreatedAt',
      's.aal as sessionAal',
      's.client_key_id as clientKeyId',
    )) as RefreshTokenState | undefined;
}

/** Whether a refresh would accept the token now (refresh.ts's rules, without rotating it). */
function isLiveRefreshToken(services: TokenEndpointServices, state: RefreshTokenState): boolean {
  const now = Date.now();
  return (
    state.usedAt === null &&
    state.revokedAt === null &&
    state.sessionEndedAt === null &&
    state.expiresAt.getTime() > now &&
    state.sessionCreatedAt.getTime() + services.sessionMaxLifetimeS * 1000 > now &&
    state.userStatus === 'ACTIVE'
  );
}

const epochS = (date: Date): number => Math.floor(date.getTime() / 1000);

/** Looks a token up as the hint says first: an access token unless the hint names a refresh token. */
function refreshFirst(hint: string | undefined): boolean {
  return hint === 'refresh_token';
}

/**
 * RFC 7662 introspection (CONTRACT.md part 16): the token's claims while it is alive, exactly
 * `{ active: false }` for a token expired, revoked, of an ended session, malformed or unknown.
 */
export async function introspect(services: TokenEndpointServices, token: string, hint: string | undefined): Promise<IntrospectionResult> {
  const asAccess = async (): Promise<IntrospectionResult | undefined> => {
    const principal = await liveAccessToken(services, token);
    if (principal === undefined) return undefined;
    return {
      active: true,
      token_type: 'access_token',
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
    const state = await refreshTokenState(services, token);
    if (state === undefined || !isLiveRefreshToken(services, state)) return undefined;
    return {
      active: true,
      token_type: 'refresh_token',
      sub: state.userId,
      username: state.username,
      sid: state.sessionId,
      ...(state.clientKeyId === null ? {} : { client_id: state.clientKeyId }),
      iss: services.issuer,
      exp: epochS(state.expiresAt),
      iat: epochS(state.issuedAt),
      roles: [...state.roles],
      aal: state.sessionAal,
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
    const state = await refreshTokenState(services, token);
    if (state === undefined) return false;
    if (state.sessionEndedAt !== null || bound(state.clientKeyId ?? undefined)) return true;
    const session = { id: state.sessionId, userId: state.userId };
    await services.sessions.transaction((_trx, ending) => ending.one(withActor(audit, state.userId), session, 'revoked'));
    return true;
  };
  const [first, second] = refreshFirst(hint) ? [asRefresh, asAccess] : [asAccess, asRefresh];
  if (!(await first())) await second();
}
