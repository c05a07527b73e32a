import { type Principal, assertSelfOrRole } from '@platform/auth';

/** Accounts are the owning user's or an ADMIN's business (CONTRACT.md part 4); 403 for anyone else. */
export function assertMayUseAccountOf(principal: Principal, userId: string): void {
  assertSelfOrRole(principal, userId, ['ADMIN']);
}
