import { setTimeout as sleep } from 'node:timers/promises';
import type { RevocationWriter } from '@platform/auth';
import { type Logger, REDIS_COMMAND_TIMEOUT_MS, answerBudgetMs, currentRequestLog, withTimeout } from '@platform/service-kit';
import { type Knex, retryingTransaction } from '@platform/service-kit/database';
import type { NewAuditEvent } from '../audit/audit-event.ts';
import type { AuditContext } from '../request/audit-context.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';
import { type AccessTokenRecord, revokeIssuedAccessTokens } from './revoked-tokens.ts';
import { type SessionEndReason, lockSessions } from './sessions.repository.ts';

/**
 * The one way a session ends (CONTRACT.md parts 4 and 11). Ending is two steps: the session and its
 * refresh tokens end in Postgres, recorded in the audit trail, in the transaction of the change that
 * ends them; then, once that commits, the sessions are published to the shared blacklist, so that
 * their access tokens are refused by every verifier at once, not when they expire. Both steps live
 * here and nowhere else: a use case runs its transaction through `transaction`, ends sessions with
 * the `SessionEnding` it is handed, and the publishing follows by itself. A transaction that rolls
 * back publishes nothing. A publish that Redis does not take is handed back to the revocations
 * (`missed`), which write those sessions again from Postgres as soon as Redis answers.
 *
 * The access tokens of a session that lives on are revoked the same way (`revokeTokensOf`): recorded in the
 * transaction, published once it commits, handed back as missed when Redis does not take them.
 *
 * Words: a session *ends*; a token is *revoked* (the blacklist entry of one access token at logout).
 */
export interface SessionEndings {
  /**
   * Runs `work` in one Postgres transaction (again, from the start, when Postgres rolled it back for a
   * deadlock or a serialization failure); resolves, after the commit, once every session it ended is
   * published (or handed back as missed). Rejects as `work` does, having published nothing.
   */
  transaction<T>(work: (trx: Knex.Transaction, ending: SessionEnding) => Promise<T>): Promise<T>;
}

/** Ends sessions inside one `SessionEndings.transaction`; each ending is recorded as `session.revoked`. */
export interface SessionEnding {
  /** Ends one session of a user; false when it had ended already (nothing recorded then). */
  one(audit: AuditContext, session: { id: string; userId: string }, reason: SessionEndReason): Promise<boolean>;
  /** Ends every live session of a user; returns their ids. */
  allOf(audit: AuditContext, userId: string, reason: SessionEndReason): Promise<string[]>;
  /**
   * Revokes every access token issued to a session that lives on (recorded as it is issued), the caller
   * holding the session's row; returns how many.
   */
  revokeTokensOf(sessionId: string): Promise<number>;
}

export interface SessionEndingsOptions {
  db: Knex;
  /** The environment's revocations, read by gateway, identity and risk. */
  revocations: Pick<RevocationWriter, 'endSessions' | 'revoke' | 'missed'>;
  /** ACCESS_TOKEN_TTL_S: the latest `exp` an access token of a session ending now can carry is now + this. */
  accessTokenTtlS: number;
  logger: Logger;
}

/**
 * A refresh that committed just before its session ended signs its access token a moment after: its
 * `exp` may fall in the second after the one the ending read.
 */
const REFRESH_RACE_S = 1;

/**
 * The waits between the attempts to publish ended sessions within the request that ended them: a connection
 * that drops and comes back (ioredis reconnects within 100-300 ms) does not leave a token of an ended session
 * accepted after the answer said it ended. Past them, or past the request's deadline (its answer, which
 * waits for them, is due: `answerBudgetMs`), the sessions are handed back (`missed`).
 */
const PUBLISH_RETRY_DELAYS_MS = [100, 200, 400];

/**
 * `write`, or a rejection once the request's answer is due (`answerBudgetMs`), whichever comes first: a
 * command that Redis holds (frozen, or its timeout longer than what is left) must not hold the answer past
 * the time the gateway said it gives up by. The write goes on; whatever it ends in, `missed` covers it.
 */
function beforeAnswerDue(write: Promise<void>): Promise<void> {
  const budgetMs = answerBudgetMs();
  return budgetMs === Infinity ? write : withTimeout(write, Math.max(0, budgetMs));
}

function sessionsEnded(userId: string, sessionIds: readonly string[], reason: SessionEndReason): NewAuditEvent {
  return { type: 'session.revoked', subjectUserId: userId, details: { sessionIds, reason } };
}

/** Ends the sessions with these ids (locked and live) and their refresh tokens, sessions first. */
async function endSessionRows(trx: Knex.Transaction, sessionIds: readonly string[], reason: SessionEndReason): Promise<void> {
  if (sessionIds.length === 0) return;
  await trx('sessions').whereIn('id', sessionIds).update({ revoked_at: trx.fn.now(), revoked_reason: reason });
  await trx('refresh_tokens').whereIn('session_id', sessionIds).whereNull('revoked_at').update({ revoked_at: trx.fn.now() });
}

export function createSessionEndings(options: SessionEndingsOptions): SessionEndings {
  const { db, revocations, logger } = options;
  /** Runs `write` until Redis takes it, within the request (PUBLISH_RETRY_DELAYS_MS); past that, `missed` hands it back. */
  const published = async (write: () => Promise<void>, missed: () => void, what: Record<string, unknown>): Promise<void> => {
    for (let attempt = 0; ; attempt += 1) {
      try {
        await beforeAnswerDue(write());
        return;
      } catch (err) {
        const wait = PUBLISH_RETRY_DELAYS_MS[attempt];
        // Nor past the request's deadline: its answer must come before the gateway gives up, so the wait and the
        // next attempt, which may take a whole command timeout, must both fit in what is left of it.
        if (wait === undefined || wait + REDIS_COMMAND_TIMEOUT_MS >= answerBudgetMs()) {
          missed();
          currentRequestLog(logger).warn({ err, ...what }, 'could not publish ended sessions or revoked tokens to the blacklist; they are written again as soon as Redis answers');
          return;
        }
        await sleep(wait);
      }
    }
  };
  const publish = async (sessionIds: readonly string[], tokens: readonly AccessTokenRecord[]): Promise<void> => {
    const until = Math.floor(Date.now() / 1000) + options.accessTokenTtlS + REFRESH_RACE_S;
    await Promise.all([
      sessionIds.length === 0 ? undefined : published(() => revocations.endSessions(sessionIds, until), () => revocations.missed(sessionIds), { sessions: sessionIds.length }),
      tokens.length === 0
        ? undefined
        : published(
            async () => {
              await Promise.all(tokens.map((token) => revocations.revoke(token, token.expiresAt)));
            },
            () => revocations.missed([...new Set(tokens.map((token) => token.sessionId))]),
            { tokens: tokens.length },
          ),
    ]);
  };
  return {
    async transaction(work) {
      let ended: string[] = [];
      let revoked: AccessTokenRecord[] = [];
      let open = true;
      const assertOpen = (): void => {
        // An ending outside its transaction would never be published: a programming error, loudly.
        if (!open) throw new Error('a SessionEnding was used after its transaction ended');
      };
      const result = await retryingTransaction(db, async (trx) => {
        // A run that lost a race was rolled back whole: it ended and revoked nothing.
        ended = [];
        revoked = [];
        const ending: SessionEnding = {
          async one(audit, session, reason) {
            assertOpen();
            const done = (await lockSessions(trx, { sessionIds: [session.id] })).length > 0;
            if (done) {
              await endSessionRows(trx, [session.id], reason);
              await insertAuditEvent(trx, audit, sessionsEnded(session.userId, [session.id], reason));
              ended.push(session.id);
            }
            return done;
          },
          async allOf(audit, userId, reason) {
            assertOpen();
            const ids = await lockSessions(trx, { userId });
            if (ids.length > 0) {
              await endSessionRows(trx, ids, reason);
              await insertAuditEvent(trx, audit, sessionsEnded(userId, ids, reason));
              ended.push(...ids);
            }
            return ids;
          },
          async revokeTokensOf(sessionId) {
            assertOpen();
            const tokens = await revokeIssuedAccessTokens(trx, sessionId);
            revoked.push(...tokens);
            return tokens.length;
          },
        };
        return work(trx, ending);
      }).finally(() => {
        open = false;
      });
      await publish(ended, revoked);
      return result;
    },
  };
}
