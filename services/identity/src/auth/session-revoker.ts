import type { TokenBlacklist } from '@platform/auth';
import type { Logger } from '@platform/service-kit';

/**
 * Makes ended sessions visible to every token verifier: the database already refuses their refresh
 * tokens; this stops their access tokens too, before they expire. Called after the ending commits.
 */
export interface SessionRevoker {
  revoke(sessionIds: readonly string[]): Promise<void>;
}

/** Session revocations in the shared blacklist, each kept as long as an access token can live. */
export function createSessionRevoker(blacklist: TokenBlacklist, accessTokenTtlS: number, logger: Logger): SessionRevoker {
  return {
    async revoke(sessionIds) {
      try {
        await blacklist.revokeSessions(sessionIds, Math.floor(Date.now() / 1000) + accessTokenTtlS);
      } catch (err) {
        // The sessions are ended in Postgres already; what is lost is only the early end of their access tokens.
        logger.warn({ err, sessions: sessionIds.length }, 'could not publish ended sessions to the blacklist');
      }
    },
  };
}
