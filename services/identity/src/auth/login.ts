import { TooManyRequestsError, UnauthorizedError } from '@platform/errors';
import { assertRequestOpen } from '@platform/service-kit';
import { deadlineTransaction } from '@platform/service-kit/database';
import type { AuditContext } from '../request/audit-context.ts';
import { attemptedUsername } from '../audit/attempted-username.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';
import { findUserByUsername } from '../user-records/users.repository.ts';
import type { AuthServices, AuthenticationResult } from './auth-services.ts';
import type { Caller } from '../request/caller-throttle.ts';
import { countFailedLogin } from './count-failed-login.ts';
import { startSession } from './start-session.ts';

/**
 * POST /v1/auth/login. Unknown user, wrong password and a user who is not ACTIVE all end in the same
 * 401, and every path compares a password hash first and records the attempt (`login.failed`: a known
 * user's username; for an unknown one the text given when it is shaped like an address, else a keyed
 * digest, never what may be a password typed into the wrong field), so neither body nor timing tells them apart.
 */
export async function login(
  services: AuthServices,
  input: { username: string; password: string },
  caller: Caller,
  audit: AuditContext,
): Promise<AuthenticationResult> {
  const throttled = async <T>(look: Promise<T>): Promise<T> => {
    try {
      return await look;
    } catch (err) {
      if (err instanceof TooManyRequestsError) services.countLogin('throttled');
      throw err;
    }
  };
  await throttled(services.throttle.assertAllowed(caller));
  // In the caller's turn: a flood of logins from one client key or address waits behind itself, and what
  // the hashing threads cannot serve in time is refused before the user is looked up (known or not alike).
  const lane = [caller.clientKeyId ?? '', caller.address] as const;
  services.hasher.assertRoom(lane);
  const user = await findUserByUsername(services.db, input.username);
  // When the compare's turn comes, the attempt is counted as a failure before it is made (429 when the
  // allowance is used up), and given back if the password was right: the checks served at once see each
  // other's attempts, so a flood of them passes no more failures than the limit.
  let counted: { release: () => Promise<void> } | undefined;
  let passwordMatches: boolean;
  try {
    passwordMatches = await services.hasher.verify(input.password, user?.passwordHash, lane, async () => {
      counted = await throttled(services.throttle.reserve(caller));
    });
    // A failure whose compare ended past the deadline serves an answer already given (503).
    if (!passwordMatches || user?.status !== 'ACTIVE') assertRequestOpen();
  } catch (err) {
    // No compare, one whose outcome never came (the hashing thread failed), or one past the deadline: no
    // failure is counted or recorded.
    await counted?.release();
    throw err;
  }

  if (user !== undefined && passwordMatches && user.status === 'ACTIVE') {
    await counted?.release();
    services.countLogin('succeeded');
    return startSession(services, user, audit);
  }

  services.countLogin(user === undefined ? 'unknown_user' : passwordMatches ? 'not_active' : 'wrong_password');
  if (user === undefined) {
    const attempt = attemptedUsername(input.username, services.auditKey);
    await deadlineTransaction(services.db, (trx) => insertAuditEvent(trx, audit, { type: 'login.failed', subjectUserId: null, details: { ...attempt, reason: 'unknown-username' } }));
    throw new UnauthorizedError('Bad Credentials', { cause: new Error('unknown user') });
  }
  // The username matched this user's (case-insensitively): it is the user's own address.
  const attempt = { username: user.username };
  if (!passwordMatches) {
    await countFailedLogin(services, user, audit, { ...attempt, reason: 'wrong-password' });
  } else {
    await deadlineTransaction(services.db, (trx) => insertAuditEvent(trx, audit, { type: 'login.failed', subjectUserId: user.id, details: { ...attempt, reason: 'user-not-active', status: user.status } }));
  }
  throw new UnauthorizedError('Bad Credentials', { cause: new Error('login refused') });
}
