import { type Logger, currentRequestLog } from '@platform/service-kit';
import type { Knex } from '@platform/service-kit/database';
import type { AuditContext } from '../request/audit-context.ts';
import { insertAuditEvents } from '../audit/audit.repository.ts';
import type { Mailer } from '../notifications/mailer.ts';
import { recordFailedLogin } from '../user-records/users.repository.ts';
import type { UserRecord } from '../user-records/user.ts';
import type { SessionEnding, SessionEndings } from '../sessions/session-endings.ts';

/** What counting a failed login needs. */
export interface FailedLoginDeps {
  db: Knex;
  logger: Logger;
  mailer: Mailer;
  sessions: SessionEndings;
  maxFailedLogins: number;
}

/** What the `login.failed` event says of the attempt: the username as given and why it failed. */
export interface FailedAttempt {
  username: string;
  reason: 'wrong-password' | 'wrong-current-password' | 'wrong-second-factor';
}

/** A failed login counted: the user it was counted against, its count now, and whether this one blocked it. */
export interface CountedFailure {
  user: UserRecord;
  failedLoginCount: number;
  blockedNow: boolean;
  /** The sessions the block ended. */
  ended: readonly string[];
}

/**
 * One wrong password of a known user (at login, or as the current password of a username change), or one
 * wrong second-factor code: counted atomically, in the caller's transaction; the failure that blocks the user
 * also ends every session of theirs there, so tokens stolen before the block stop working at once
 * (CONTRACT.md part 4). The attempt, the block and the ended sessions are recorded in it too. Once it
 * commits, `afterFailedLogin` says so.
 */
export async function countFailedLoginIn(
  trx: Knex.Transaction,
  ending: SessionEnding,
  deps: Pick<FailedLoginDeps, 'maxFailedLogins'>,
  user: UserRecord,
  audit: AuditContext,
  attempt: FailedAttempt,
): Promise<CountedFailure> {
  const counted = await recordFailedLogin(trx, user.id, deps.maxFailedLogins);
  const { failedLoginCount } = counted;
  await insertAuditEvents(trx, audit, [
    { type: 'login.failed', subjectUserId: user.id, details: { ...attempt, failedLoginCount } },
    ...(counted.blockedNow ? [{ type: 'user.blocked' as const, subjectUserId: user.id, details: { failedLoginCount } }] : []),
  ]);
  return { user, ...counted, ended: counted.blockedNow ? await ending.allOf(audit, user.id, 'user-blocked') : [] };
}

/** After the transaction that counted a failure committed: a block is logged and mailed to the owner. */
export function afterFailedLogin(deps: Pick<FailedLoginDeps, 'logger' | 'mailer'>, counted: CountedFailure): void {
  if (!counted.blockedNow) return;
  const { user } = counted;
  currentRequestLog(deps.logger).warn({ userId: user.id, failedLoginCount: counted.failedLoginCount, sessionsEnded: counted.ended.length }, 'user blocked after repeated failed logins');
  // Not awaited: the answer must not wait for (or reveal) the mail provider.
  void deps.mailer.send({
    to: user.username,
    subject: 'Your account has been blocked',
    text:
      `Hello ${user.firstName},\n\nafter ${counted.failedLoginCount} failed login attempts your user ${user.username} ` +
      'has been blocked to protect it. An administrator can lift the block; please contact your administrator.\n',
  });
}

/** One failed login counted in a transaction of its own (`countFailedLoginIn`), then `afterFailedLogin`. */
export async function countFailedLogin(deps: FailedLoginDeps, user: UserRecord, audit: AuditContext, attempt: FailedAttempt): Promise<void> {
  afterFailedLogin(deps, await deps.sessions.transaction((trx, ending) => countFailedLoginIn(trx, ending, deps, user, audit, attempt)));
}
