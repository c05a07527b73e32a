import { type Principal, assertSelfOrRole, hasAnyRole } from '@platform/auth';

/** Accounts are the owning user's or an ADMIN's business (CONTRACT.md part 4); 403 for anyone else. */
export function assertMayUseAccountOf(principal: Principal, userId: string): void {
  assertSelfOrRole(principal, userId, ['ADMIN']);
}

/**
 * The same rule where the caller names an account by its own id, not by its user: there an account that is
 * not the caller's to use must answer as one that does not exist (404), or the answer tells which account
 * ids exist (as a session's id answers at DELETE /v1/auth/sessions/{id}).
 */
export function mayUseAccountOf(principal: Principal, userId: string): boolean {
  return principal.userId === userId.toLowerCase() || hasAnyRole(principal, ['ADMIN']);
}
