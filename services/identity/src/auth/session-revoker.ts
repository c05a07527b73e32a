import type { TokenBlacklist } from '@platform/auth';
import { type Logger, currentRequestLog } from '@platform/service-kit';

/**
 * Makes ended sessions visible to every token verifier: the database already refuses their refresh
 * tokens; this stops their access tokens too, before they expire. Called after the ending commits.
 */
export interface SessionRevoker {
  revoke(sessionIds: readonly string[]): Promise<void>;
}

/**
 * A refresh that committed just before its session ended signs its access token a moment after: its
 * `exp` may fall in the second after the one the ending read.
 */
const REFRESH_RACE_S = 1;

/**
 * Session revocations in the shared blacklist, each kept as long as an access token of the session can
 * be accepted (the blacklist adds the verifiers' clock tolerance to the latest `exp`). When Redis
 * cannot take one, `missed` is told: the sessions are ended in Postgres already, and the revocation
 * mirror keeper re-seeds Redis from there (failing bearer requests closed meanwhile) once it answers.
 */
export function createSessionRevoker(blacklist: TokenBlacklist, accessTokenTtlS: number, logger: Logger, missed: () => void = () => undefined): SessionRevoker {
  return {
    async revoke(sessionIds) {
      try {
        await blacklist.revokeSessions(sessionIds, Math.floor(Date.now() / 1000) + accessTokenTtlS + REFRESH_RACE_S);
      } catch (err) {
        missed();
        currentRequestLog(logger).warn({ err, sessions: sessionIds.length }, 'could not publish ended sessions to the blacklist; the revocation mirror will be re-seeded');
      }
    },
  };
}
