import { type RevocationWriter, createRevocationWriter } from '@platform/auth';
import type { Logger, Redis } from '@platform/service-kit';
import type { Knex } from '@platform/service-kit/database';
import type { Position } from '../pagination/cursor.ts';
import { liveRevokedTokens } from './revoked-tokens.ts';
import { sessionsEndedSince } from './sessions.repository.ts';

/** Sessions read per step of a re-seed. */
const BATCH = 1000;

export interface RevocationsOptions {
  db: Knex;
  /** The environment's Redis (REDIS_KEY_PREFIX), shared with the gateway and risk. */
  redis: Redis;
  /** ACCESS_TOKEN_TTL_S: how long after its end a session's tokens may still be live. */
  accessTokenTtlS: number;
  /** REVOCATION_MIRROR_CHECK_MS: how often every bucket is looked at. */
  intervalMs: number;
  logger: Logger;
  /** While looks keep failing, at most one reminder line per this many ms (default one a minute). */
  reminderMs?: number;
}

/**
 * Identity's writer of the revocations (@platform/auth, CONTRACT.md parts 13 and 14): it writes every ended
 * session, and keeps Redis's copy whole from the record in Postgres (`sessions.revoked_at`, paged on the
 * exact instant, and `revoked_tokens`). Started by the composition root; `stop` on shutdown, before Postgres and Redis are closed.
 */
export function startRevocations(options: RevocationsOptions): RevocationWriter {
  const { db } = options;
  return createRevocationWriter(options.redis, {
    logger: options.logger,
    intervalMs: options.intervalMs,
    accessTokenTtlS: options.accessTokenTtlS,
    reminderMs: options.reminderMs,
    async *endedSince(since) {
      let after: Position | undefined;
      for (;;) {
        const page = await sessionsEndedSince(db, since, BATCH, after);
        yield page.map((session) => ({ sessionId: session.id, endedAt: session.endedAt }));
        if (page.length < BATCH) return;
        after = page.at(-1)?.position;
      }
    },
    revokedTokens: () => liveRevokedTokens(db),
  });
}
