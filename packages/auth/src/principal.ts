import { ForbiddenError, UnauthorizedError } from '@platform/errors';
import type { Role } from './roles.ts';

/** Who a verified access token speaks for (CONTRACT.md part 4 claims, named for code). */
export interface Principal {
  /** `sub`: the user id. */
  userId: string;
  username: string;
  roles: readonly Role[];
  /** `sid`: the login session the token belongs to. */
  sessionId: string;
  /** `jti`: the token's own id, the blacklist key. */
  tokenId: string;
  /** `exp`, epoch seconds. */
  expiresAt: number;
  /** `iat`, epoch seconds; undefined when absent. */
  issuedAt?: number;
  /** `cnf.kid` (RFC 7800, CONTRACT.md part 16): the client key the token was issued to; undefined when unbound. */
  clientKeyId?: string;
  /** `aal`: 1 after the password alone, 2 after the second factor too (CONTRACT.md part 15); 1 when absent. */
  aal: 1 | 2;
  /** `sfr`: the user must show its second factor (it has one, or its roles require one); false when absent. */
  secondFactorRequired: boolean;
}

/** The 403 of a token that needs the second factor it has not shown (CONTRACT.md part 15). */
export const SECOND_FACTOR_REQUIRED_MESSAGE = 'Second factor required';

/**
 * Throws 403 `Second factor required` when the principal's token is `aal` 1 though its user must show a
 * second factor: every operation but those of enrolment and the second factor itself refuses it.
 */
export function assertSecondFactor(principal: Principal): void {
  if (principal.aal < 2 && principal.secondFactorRequired) throw new ForbiddenError(SECOND_FACTOR_REQUIRED_MESSAGE);
}

/** The 401 of a token presented under another client key than the one it was issued to (CONTRACT.md part 16). */
export const TOKEN_BOUND_ELSEWHERE_MESSAGE = 'Token bound to another client';

/**
 * The 403 at the introspection endpoint of a client key whose entry does not say `"introspection": true`
 * (the gateway's), or of a caller with no client key at all (identity called directly) (CONTRACT.md part 16).
 */
export const INTROSPECTION_KEY_MESSAGE = 'This client key may not introspect tokens';

/**
 * Whether a token bound to a client key (`cnf.kid`) is presented under another one: `clientKeyId` is the key
 * whose signature the request carries. An unbound token, or a request under no verified key (a direct call
 * inside the cluster), is not bound elsewhere.
 */
export function isBoundElsewhere(principal: Pick<Principal, 'clientKeyId'>, clientKeyId: string | undefined): boolean {
  return principal.clientKeyId !== undefined && clientKeyId !== undefined && clientKeyId !== '' && principal.clientKeyId !== clientKeyId;
}

/** Throws 401 `Token bound to another client` when `isBoundElsewhere`. */
export function assertBoundTo(principal: Pick<Principal, 'clientKeyId'>, clientKeyId: string | undefined): void {
  if (isBoundElsewhere(principal, clientKeyId)) throw new UnauthorizedError(TOKEN_BOUND_ELSEWHERE_MESSAGE);
}

/** True when the principal holds at least one of the roles. */
export function hasAnyRole(principal: Principal, roles: readonly Role[]): boolean {
  return principal.roles.some((role) => roles.includes(role));
}

/** Throws 403 unless the principal holds at least one of the roles. */
export function assertAnyRole(principal: Principal, roles: readonly Role[]): void {
  if (!hasAnyRole(principal, roles)) throw new ForbiddenError();
}

/** Throws 403 unless the principal is the user `userId` or holds one of the roles. */
export function assertSelfOrRole(principal: Principal, userId: string, roles: readonly Role[]): void {
  // Ids are uuids, which may arrive in upper case; the token carries them as stored (lower case).
  if (principal.userId !== userId.toLowerCase() && !hasAnyRole(principal, roles)) throw new ForbiddenError();
}
