import { type Logger, currentRequestLog } from '@platform/service-kit';
import type { Knex } from '@platform/service-kit/database';
import type { AuditContext } from '../request/audit-context.ts';
import { insertAuditEvents } from '../audit/audit.repository.ts';
import type { Mailer } from '../notifications/mailer.ts';
import { recordFailedLogin } from '../user-records/users.repository.ts';
import type { UserRecord } from '../user-records/user.ts';
import type { SessionEndings } from '../sessions/session-endings.ts';

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

/**
 * One wrong password of a known user (at login, or as the current password of a username change):
 * counted atomically; the failure that blocks the user also ends every session of theirs, in the same
 * transaction, so tokens stolen before the block stop working at once (CONTRACT.md part 4), and mails
 * the owner. The attempt, the block and the ended sessions are recorded in that transaction too.
 */
export async function countFailedLogin(deps: FailedLoginDeps, user: UserRecord, audit: AuditContext, attempt: FailedAttempt): Promise<void> {
  const outcome = await deps.sessions.transaction(async (trx, ending) => {
    const counted = await recordFailedLogin(trx, user.id, deps.maxFailedLogins);
    const { failedLoginCount } = counted;
    await insertAuditEvents(trx, audit, [
      { type: 'login.failed', subjectUserId: user.id, details: { ...attempt, failedLoginCount } },
      ...(counted.blockedNow ? [{ type: 'user.blocked' as const, subjectUserId: user.id, details: { failedLoginCount } }] : []),
    ]);
    return { ...counted, ended: counted.blockedNow ? await ending.allOf(audit, user.id, 'user-blocked') : [] };
  });
  if (!outcome.blockedNow) return;
  currentRequestLog(deps.logger).warn(
    { userId: user.id, failedLoginCount: outcome.failedLoginCount, sessionsEnded: outcome.ended.length },
    'user blocked after repeated failed logins',
  );
  // Not awaited: the answer must not wait for (or reveal) the mail provider.
  void deps.mailer.send({
    to: user.username,
    subject: 'Your account has been blocked',
    text:
      `Hello ${user.firstName},\n\nafter ${outcome.failedLoginCount} failed login attempts your user ${user.username} ` +
      'has been blocked to protect it. An administrator can lift the block; please contact your administrator.\n',
  });
}
