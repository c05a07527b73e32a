import { ALL_REVOCATION_BUCKETS, type TokenBlacklist, bucketMirrors, bucketStamps, guardMirrors, mirrorCloser, redisBlacklist, revocationBucket, revocationTicket, sameTicket } from '@platform/auth';
import { type Logger, type ReadinessCheck, type Redis, periodic } from '@platform/service-kit';
import type { Knex } from '@platform/service-kit/database';
import type { Position } from '../pagination/cursor.ts';
import { sessionsEndedSince } from './sessions.repository.ts';

/** While checks keep failing, how often the log says so again (the first failure and the recovery always do). */
const FAILING_REMINDER_MS = 60_000;
/** How soon a re-seed whose buckets were closed again meanwhile runs again: doubled each time in a row, up to the check interval. */
const RESEED_AGAIN_MS = 100;
/** Sessions read and written to Redis per step of a re-seed. */
const BATCH = 1000;
/**
 * Added to each re-seeded session's lifetime: a token refreshed while its session was being ended may
 * have been issued a moment after `revoked_at`; the mirror keeps it out for its whole life.
 */
const MARGIN_S = 60;

/**
 * Keeps Redis's mirror of the revocations whole (CONTRACT.md parts 13 and 14), bucket by bucket (each
 * bucket one slot, @platform/auth buckets.ts): every check reads every bucket's mirror and stamp, one
 * script per bucket, all at once; only the buckets found lost are re-seeded, each as soon as its shard
 * answers, whatever the other shards do. Revocations are recorded in
 * Postgres (every ended session, with when); when the mirror in Redis is missing (Redis lost its data)
 * or was marked not ready, every bearer request fails closed until this re-seeds every session ended
 * within the access-token lifetime and marks the mirror ready again. Also when a revocation could not be
 * written to Redis (it was down): the mirror is then marked not ready as soon as Redis answers, and
 * re-seeded, so a revocation never goes missing. And when Redis holds fewer of this replica's revocations
 * than it wrote (its write stamp went back: a replica that lagged was promoted), though the mirror's hash
 * survived. Checked every `intervalMs` in every identity replica; a shard lost or replaced has its
 * buckets closed and re-seeded.
 */
export interface RevocationMirrorKeeper {
  /** The blacklist every revocation of this process goes through: each one counts on the keeper's write stamp. */
  blacklist: TokenBlacklist;
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
  /** The environment's Redis (REDIS_KEY_PREFIX), shared with the gateway and risk. */
  redis: Redis;
  /** ACCESS_TOKEN_TTL_S: how long after its end a session's tokens may still be live. */
  accessTokenTtlS: number;
  intervalMs: number;
  logger: Logger;
  /** While checks keep failing, at most one reminder line per this many ms (default one a minute). */
  reminderMs?: number;
}

/**
 * Some buckets' shard does not answer, every other bucket is whole: their sessions' requests fail closed
 * on their own (the shard is down), the rest are served, so identity stays ready (a failover of one shard
 * must not take every identity replica out of its Service). Logged like any failed check.
 */
class ShardsUnreachable extends Error {
  constructor(unreachable: number) {
    super(`${unreachable} revocation buckets unreachable (a Redis shard down or failing over?); the others are whole`);
    this.name = 'ShardsUnreachable';
  }
}

/** Starts the keeper (its timer does not hold the process open); `stop` on shutdown. */
export function startRevocationMirrorKeeper(options: RevocationMirrorKeeperOptions): RevocationMirrorKeeper {
  const { db, redis, logger } = options;
  const stamps = bucketStamps(redis, 'identity');
  const buckets = bucketMirrors(redis);
  const blacklist = redisBlacklist(redis, { stamps });
  const closeAllMirrors = mirrorCloser(redis);
  let dirty = false;
  let stopping = false;
  // Re-seeds in a row whose buckets were closed again meanwhile (their next one waits longer each time).
  let reseedsInARow = 0;
  // Whether the last check found (or left) every mirror whole; false until the first one succeeds.
  let whole = false;

  /** Writes every revocation of `targets` that may still be live; resolves with how many. */
  const reseed = async (targets: ReadonlySet<number>): Promise<number> => {
    const since = new Date(Date.now() - (options.accessTokenTtlS + MARGIN_S) * 1000);
    let count = 0;
    let after: Position | undefined;
    for (;;) {
      const page = await sessionsEndedSince(db, since, BATCH, after);
      // Each key lives as long as the session's tokens could: from its end, one token lifetime and the margin
      // (and the blacklist adds the verifiers' clock tolerance).
      const mine = page.filter((session) => targets.has(revocationBucket(session.id)));
      await blacklist.restoreEndedSessions(mine.map((session) => ({ sessionId: session.id, latestExp: session.endedAt.getTime() / 1000 + options.accessTokenTtlS + MARGIN_S })));
      count += mine.length;
      if (page.length < BATCH) break;
      after = page.at(-1)?.position;
    }
    return count;
  };

  /** Set while checks fail: since when, and when the log last said so. */
  let failing: { since: number; told: number } | undefined;
  const reminderMs = options.reminderMs ?? FAILING_REMINDER_MS;
  const reasonOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

  /** Whether a re-seed line closed an outage (it then says how long it lasted): the recovery is logged once. */
  const recovered = (): { downForMs: number } | undefined => {
    if (failing === undefined) return undefined;
    const downForMs = Date.now() - failing.since;
    failing = undefined;
    return { downForMs };
  };

  const check = async (): Promise<void> => {
    const wasDirty = dirty;
    if (wasDirty) {
      // A revocation missed Redis, in a bucket nobody knows: every mirror closes until all are re-seeded.
      await closeAllMirrors();
      // Cleared before the re-seed: a revocation that misses Redis while it runs is re-seeded next time.
      dirty = false;
    }
    // Where each bucket's shard stood before it was read: a re-seed does not open a bucket whose shard
    // changed since (its writes may have gone to a master that is gone); the guard closes it, and it is
    // read and re-seeded again.
    const tickets = ALL_REVOCATION_BUCKETS.map((bucket) => revocationTicket(redis, bucket));
    // Every bucket at once (one script per slot, auto-pipelined per shard): a shard that does not answer
    // leaves its buckets for the next check, and does not hold up the others.
    const bucketReads = await Promise.allSettled(ALL_REVOCATION_BUCKETS.map((bucket) => stamps.check(bucket)));
    const states = bucketReads.flatMap((read) => (read.status === 'fulfilled' ? [read.value] : []));
    const unreachable = bucketReads.length - states.length;
    // Nothing answered: Redis is down (the reason is the first bucket's).
    if (states.length === 0) throw bucketReads.find((read) => read.status === 'rejected')?.reason;
    const lost = states.filter((state) => !state.ready);
    if (lost.length === 0) {
      whole = true;
      if (unreachable > 0) throw new ShardsUnreachable(unreachable);
      const back = recovered();
      if (back !== undefined) logger.info(back, 'revocation mirror checked again; bearer requests accepted again');
      return;
    }
    whole = false;
    const started = Date.now();
    const sessions = await reseed(new Set(lost.map((state) => state.bucket)));
    const reopened = await Promise.all(
      lost.map((state) => {
        const ticket = tickets[state.bucket];
        if (ticket === undefined || !sameTicket(redis, state.bucket, ticket)) return false;
        return buckets[state.bucket]?.markReady(state) ?? false;
      }),
    );
    if (reopened.includes(false)) {
      // Closed, lost or moved again while it was re-seeded (a shard changed meanwhile; every reconnect
      // does it once, as the guards close what the re-seed read): once more, shortly. Not a failed check,
      // nothing is unreachable, and not an operator's line: the re-seed that opens the buckets logs.
      const againMs = Math.min(RESEED_AGAIN_MS * 2 ** reseedsInARow, options.intervalMs);
      reseedsInARow += 1;
      logger.debug({ buckets: reopened.filter((opened) => !opened).length, againMs }, 'revocation mirror closed again during its re-seed (a Redis shard changed meanwhile); re-seeding again');
      setTimeout(() => {
        if (!stopping) void checkNow();
      }, againMs).unref();
      return;
    }
    reseedsInARow = 0;
    whole = true;
    if (unreachable > 0) throw new ShardsUnreachable(unreachable);
    const wentBack = lost.filter((state) => state.wentBack).length;
    const cause = wasDirty ? 'a revocation missed Redis' : wentBack > 0 ? 'Redis holds fewer revocations than identity wrote (a lagging replica promoted?)' : 'Redis lost its data';
    logger.warn({ sessions, buckets: lost.length, tookMs: Date.now() - started, cause, ...recovered() }, 'revocation mirror re-seeded; bearer requests accepted again');
  };

  // One check at a time; one asked for during a check (a reconnect's) runs right after it.
  const checks = periodic(check, {
    intervalMs: options.intervalMs,
    onError: (err: unknown) => {
      if (!(err instanceof ShardsUnreachable)) whole = false;
      // One line when the checks start failing, with the reason (not the stack: it is always the client's
      // own); then a reminder at most every `reminderMs`, not one per check.
      const now = Date.now();
      if (failing === undefined) {
        failing = { since: now, told: now };
        logger.warn({ reason: reasonOf(err) }, 'revocation mirror not checked (Redis or Postgres unreachable); bearer requests stay failed closed');
      } else if (now - failing.told >= reminderMs) {
        failing.told = now;
        logger.warn({ reason: reasonOf(err), downForMs: now - failing.since }, 'revocation mirror still not checked (Redis or Postgres unreachable); bearer requests stay failed closed');
      }
    },
  });
  const checkNow = async (): Promise<void> => {
    await checks.runNow();
  };
  checks.start();
  // A shard lost or replaced may be a failover to a replica that lagged: the revocations written just
  // before may be gone (this replica's or another's) with nothing to show for it but this replica's write
  // stamp. So, as the gateway and risk do, its buckets are held and closed at once, and re-seeded from
  // Postgres (which holds every replica's revocations) as soon as the close has landed.
  const guard = guardMirrors(redis, { logger, closed: () => void checkNow() });
  void checkNow();
  return {
    blacklist,
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
      stopping = true;
      guard.stop();
      await checks.stop();
    },
  };
}
