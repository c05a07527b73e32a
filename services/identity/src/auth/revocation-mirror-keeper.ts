import { type RevocationMirror, type TokenBlacklist } from '@platform/auth';
import type { Knex, Logger, ReadinessCheck } from '@platform/service-kit';
import { type EndedSession, sessionsEndedSince } from './sessions.repository.ts';

/** Sessions read and written to Redis per step of a re-seed. */
const BATCH = 1000;
/**
 * Added to each re-seeded session's lifetime: a token refreshed while its session was being ended may
 * have been issued a moment after `revoked_at`; the mirror keeps it out for its whole life.
 */
const MARGIN_S = 60;

/**
 * Keeps Redis's mirror of the revocations whole (CONTRACT.md part 13). Revocations are recorded in
 * Postgres (every ended session, with when); when the mirror in Redis is missing (Redis lost its data)
 * or was marked not ready, every bearer request fails closed until this re-seeds every session ended
 * within the access-token lifetime and marks the mirror ready again. Also when a revocation could not be
 * written to Redis (it was down): the mirror is then marked not ready as soon as Redis answers, and
 * re-seeded, so a revocation never goes missing. Checked every `intervalMs`, in every identity replica.
 */
export interface RevocationMirrorKeeper {
  /** A revocation could not reach Redis: re-seed (failing bearer requests closed meanwhile) once it answers. */
  markDirty(): void;
  /** Runs one check now (and a re-seed when needed); resolves when done. Never rejects. */
  checkNow(): Promise<void>;
  /** Not ready until a check found the mirror whole (or re-seeded it): the revocations may not all be in Redis. */
  readiness: ReadinessCheck;
  /** Stops the timer and waits for a check under way, before Postgres and Redis are closed. */
  stop(): Promise<void>;
}

export interface RevocationMirrorKeeperOptions {
  db: Knex;
  mirror: RevocationMirror;
  blacklist: TokenBlacklist;
  /** ACCESS_TOKEN_TTL_S: how long after its end a session's tokens may still be live. */
  accessTokenTtlS: number;
  intervalMs: number;
  logger: Logger;
}

/** Starts the keeper (its timer does not hold the process open); `stop` on shutdown. */
export function startRevocationMirrorKeeper(options: RevocationMirrorKeeperOptions): RevocationMirrorKeeper {
  const { db, mirror, blacklist, logger } = options;
  let dirty = false;
  // Whether the last check found (or left) the mirror whole; false until the first one succeeds.
  let whole = false;
  let running: Promise<void> | undefined;

  const reseed = async (born: number): Promise<number> => {
    const since = new Date(Date.now() - (options.accessTokenTtlS + MARGIN_S) * 1000);
    let count = 0;
    let after: EndedSession | undefined;
    for (;;) {
      const page = await sessionsEndedSince(db, since, BATCH, after);
      // Each key lives as long as the session's tokens could: from its end, one token lifetime and the margin.
      await blacklist.restoreSessionRevocations(page.map((session) => ({ sessionId: session.id, until: session.revokedAt.getTime() / 1000 + options.accessTokenTtlS + MARGIN_S })));
      count += page.length;
      if (page.length < BATCH) break;
      after = page.at(-1);
    }
    if (!(await mirror.markReady(born))) throw new Error('Redis lost its data again during the re-seed');
    return count;
  };

  const check = async (): Promise<void> => {
    const state = await mirror.state();
    if (state.ready && !dirty) {
      whole = true;
      return;
    }
    whole = false;
    const wasDirty = dirty;
    const born = wasDirty ? await mirror.markNotReady() : state.born;
    const started = Date.now();
    const sessions = await reseed(born);
    if (wasDirty) dirty = false;
    whole = true;
    logger.warn({ sessions, tookMs: Date.now() - started, cause: wasDirty ? 'a revocation missed Redis' : 'Redis lost its data' }, 'revocation mirror re-seeded; bearer requests accepted again');
  };

  const checkNow = (): Promise<void> => {
    running ??= check()
      .catch((err: unknown) => {
        whole = false;
        logger.warn({ err }, 'revocation mirror not checked (Redis or Postgres unreachable); bearer requests stay failed closed');
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };

  const timer = setInterval(() => void checkNow(), options.intervalMs);
  timer.unref();
  void checkNow();
  return {
    markDirty: () => {
      dirty = true;
    },
    checkNow,
    readiness: {
      name: 'revocations',
      check: async () => {
        if (!whole) throw new Error('the revocation mirror in Redis is not whole yet (being re-seeded, or Redis or Postgres unreachable)');
      },
    },
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
