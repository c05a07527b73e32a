import type { Knex, Logger } from '@platform/service-kit';
import type { Mailer } from '../notifications/mailer.ts';
import { recordFailedLogin } from '../users/users.repository.ts';
import type { UserRecord } from '../users/user.ts';
import type { SessionRevoker } from './session-revoker.ts';
import { endUserSessions } from './sessions.repository.ts';

/** What counting a failed login needs. */
export interface FailedLoginDeps {
  db: Knex;
  logger: Logger;
  mailer: Mailer;
  sessions: SessionRevoker;
  maxFailedLogins: number;
}

/**
 * One wrong password of a known user (at login, or as the current password of a username change):
 * counted atomically; the failure that blocks the user also ends every session of theirs, in the same
 * transaction, so tokens stolen before the block stop working at once (CONTRACT.md part 4), and mails
 * the owner.
 */
export async function countFailedLogin(deps: FailedLoginDeps, user: UserRecord): Promise<void> {
  const outcome = await deps.db.transaction(async (trx) => {
    const counted = await recordFailedLogin(trx, user.id, deps.maxFailedLogins);
    return { ...counted, ended: counted.blockedNow ? await endUserSessions(trx, user.id, 'user-blocked') : [] };
  });
  if (!outcome.blockedNow) return;
  await deps.sessions.revoke(outcome.ended);
  deps.logger.warn({ userId: user.id, failedLoginCount: outcome.failedLoginCount, sessionsEnded: outcome.ended.length }, 'user blocked after repeated failed logins');
  // Not awaited: the answer must not wait for (or reveal) the mail provider.
  void deps.mailer.send({
    to: user.username,
    subject: 'Your account has been blocked',
    text:
      `Hello ${user.firstName},\n\nafter ${outcome.failedLoginCount} failed login attempts your user ${user.username} ` +
      'has been blocked to protect it. An administrator can lift the block; please contact your administrator.\n',
  });
}
