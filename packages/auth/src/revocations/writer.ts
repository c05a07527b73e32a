import { randomUUID } from 'node:crypto';
import type { ChainableCommander } from 'ioredis';
import { type Logger, type ReadinessCheck, type Redis, STAMP_TTL_MS, type WriteStamp, periodic, writeStamp } from '@platform/service-kit';
import { revocationExpiry } from '../token-lifetime.ts';
import { ALL_BUCKETS, type BucketCommands, ledgerKey, revocationBucket, sessionKey, stampKey, tokenKey } from './buckets.ts';
import { type RevocationReader, startReader } from './reader.ts';

/**
 * Identity's side of the revocations: it writes them (a logout, every ended session), each counted on its
 * bucket's stamp in the transaction that writes it, and it keeps them whole in Redis: every `intervalMs`,
 * and at once after a change of the servers, it looks at every bucket (one script each, all at once), and
 * re-seeds from the record of ended sessions (Postgres, `endedSince`) the buckets found closed: lost
 * (their ledger missing), gone back (its stamp behind), or closed by a process whose server was replaced.
 * A bucket is opened again only if nothing closed it, and its server did not change, while it was
 * re-seeded. Each shard's buckets are re-seeded as soon as it answers, whatever the other shards do.
 * Identity is the one process that opens buckets.
 */
export interface RevocationWriter extends RevocationReader {
  /** Revokes the access token that expires at `expiresAt` (epoch seconds); one no verifier accepts any more needs nothing. */
  revoke(token: { tokenId: string; sessionId: string }, expiresAt: number): Promise<void>;
  /**
   * Marks sessions ended, so tokens issued before a logout, password change or block stop working
   * everywhere, not only at refresh. `latestExp` (epoch seconds): the latest `exp` any access token of these
   * sessions may carry.
   */
  endSessions(sessionIds: readonly string[], latestExp: number): Promise<void>;
  /**
   * Ended sessions whose end did not reach Redis (`endSessions` failed), or, without ids, any revocation in
   * a bucket nobody knows: their buckets are written again from the record as soon as Redis answers.
   */
  missed(sessionIds?: readonly string[]): void;
  /** Looks at every bucket now (and re-seeds what needs it); resolves when done. Never rejects. */
  checkNow(): Promise<void>;
  /** Not ready until a look found every bucket open (or re-seeded it): the revocations may not all be in Redis. */
  readiness: ReadinessCheck;
}

/** A session that ended, as the record (Postgres) holds it. */
export interface EndedSession {
  sessionId: string;
  endedAt: Date;
}

/** An access token revoked alone (its session lives on), as the record (Postgres) holds it. */
export interface RevokedToken {
  tokenId: string;
  sessionId: string;
  /** The token's `exp`, epoch seconds. */
  expiresAt: number;
}

export interface RevocationWriterOptions {
  logger: Logger;
  /** How often every bucket is looked at. */
  intervalMs: number;
  /** How long after its end a session's access tokens may still be live (ACCESS_TOKEN_TTL_S). */
  accessTokenTtlS: number;
  /** Every session ended after `since`, in pages: what a re-seed writes back. */
  endedSince(since: Date): AsyncIterable<readonly EndedSession[]>;
  /** The access tokens revoked alone that some verifier could still accept: written back by a re-seed too. */
  revokedTokens?: () => Promise<readonly RevokedToken[]>;
  /** While looks keep failing, at most one reminder line per this many ms (default one a minute). */
  reminderMs?: number;
}

/** While looks keep failing, how often the log says so again (the first failure and the recovery always do). */
const FAILING_REMINDER_MS = 60_000;
/** How soon a re-seed whose buckets were closed again meanwhile runs again: doubled each time in a row, up to the interval. */
const RESEED_AGAIN_MS = 100;
/**
 * Added to each re-seeded session's lifetime: a token refreshed while its session was being ended may have
 * been issued a moment after the end; the blacklist keeps it out for its whole life.
 */
const MARGIN_S = 60;
/** A bucket as the writer's look found it. */
interface BucketLook {
  bucket: number;
  born: string;
  open: boolean;
  /** Its stamp went back while its ledger was there: a replica that lagged was promoted. */
  wentBack: boolean;
  closed: string;
}

/**
 * Some buckets' servers do not answer, every other bucket is open: their sessions' requests fail closed on
 * their own (the server is down), the rest are served, so identity stays ready (a failover of one shard
 * must not take every identity replica out of its Service). Logged like any failed look.
 */
class ShardsUnreachable extends Error {
  constructor(unreachable: number) {
    super(`${unreachable} revocation buckets unreachable (a Redis shard down or failing over?); the others are whole`);
    this.name = 'ShardsUnreachable';
  }
}

/** Throws the first error of a transaction's or pipeline's results. */
function assertAllDone(results: Array<[Error | null, unknown]> | null): Array<[Error | null, unknown]> {
  const failed = (results ?? []).find(([err]) => err !== null);
  if (failed !== undefined) throw failed[0];
  return results ?? [];
}

/** `items` grouped by the revocation bucket of each one's session: one transaction per bucket (one slot). */
function byBucket<T>(items: readonly T[], sessionOf: (item: T) => string): Map<number, T[]> {
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const bucket = revocationBucket(sessionOf(item));
    const group = groups.get(bucket);
    if (group === undefined) groups.set(bucket, [item]);
    else group.push(item);
  }
  return groups;
}

/** Two sets of buckets to write again as one (`'all'`: every bucket). */
function together(a: Set<number> | 'all', b: Set<number> | 'all'): Set<number> | 'all' {
  return a === 'all' || b === 'all' ? 'all' : new Set([...a, ...b]);
}

/** Identity's writer of the revocations on `redis`, looking at every bucket until `stop`. */
export function createRevocationWriter(redis: Redis, options: RevocationWriterOptions): RevocationWriter {
  const { logger } = options;
  const commands = redis as unknown as BucketCommands;
  const id = randomUUID();
  const stamps: WriteStamp[] = ALL_BUCKETS.map((bucket) => writeStamp(stampKey(bucket, 'identity', id)));
  let stopping = false;
  // Buckets whose revocations missed Redis, to be written again; 'all' when nobody knows which.
  let missing: Set<number> | 'all' = new Set();
  // Re-seeds in a row whose buckets were closed again meanwhile (their next one waits longer each time).
  let reseedsInARow = 0;
  // Whether the last look found (or left) every bucket open; false until the first one succeeds.
  let whole = false;

  /** Runs one bucket's revocation writes in one transaction, counted on the bucket's stamp. */
  const write = async (bucket: number, transaction: ChainableCommander): Promise<void> => {
    const stamp = stamps[bucket];
    if (stamp === undefined) throw new RangeError(`no revocation bucket ${bucket}`);
    transaction.incr(stamp.key).pexpire(stamp.key, STAMP_TTL_MS);
    const results = assertAllDone(await transaction.exec());
    stamp.observe(Number(results.at(-2)?.[1]));
  };

  /** Writes every session of `targets` ended within a token's life, and every token revoked alone and still live, back from the record; resolves with how many. */
  const reseed = async (targets: ReadonlySet<number>): Promise<number> => {
    const since = new Date(Date.now() - (options.accessTokenTtlS + MARGIN_S) * 1000);
    let count = 0;
    for await (const page of options.endedSince(since)) {
      // Each key lives as long as the session's tokens could: from its end, one token lifetime and the margin.
      const live = page
        .filter((session) => targets.has(revocationBucket(session.sessionId)))
        .map((session) => ({ sessionId: session.sessionId, until: revocationExpiry(session.endedAt.getTime() / 1000 + options.accessTokenTtlS + MARGIN_S) }))
        .filter(({ until }) => until * 1000 > Date.now());
      await Promise.all(
        [...byBucket(live, (session) => session.sessionId)].map(async ([, group]) => {
          const pipeline = redis.pipeline();
          for (const { sessionId, until } of group) pipeline.set(sessionKey(sessionId), '1', 'EXAT', until);
          assertAllDone(await pipeline.exec());
        }),
      );
      count += live.length;
    }
    const tokens = (await options.revokedTokens?.()) ?? [];
    const liveTokens = tokens
      .filter((token) => targets.has(revocationBucket(token.sessionId)))
      .map((token) => ({ token, until: revocationExpiry(token.expiresAt) }))
      .filter(({ until }) => until * 1000 > Date.now());
    await Promise.all(
      [...byBucket(liveTokens, ({ token }) => token.sessionId)].map(async ([, group]) => {
        const pipeline = redis.pipeline();
        for (const { token, until } of group) pipeline.set(tokenKey(token), '1', 'EXAT', until);
        assertAllDone(await pipeline.exec());
      }),
    );
    return count + liveTokens.length;
  };

  /** Set while looks fail: since when, and when the log last said so. */
  let failing: { since: number; told: number } | undefined;
  const reminderMs = options.reminderMs ?? FAILING_REMINDER_MS;
  const reasonOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));
  /** Whether a line closes an outage (it then says how long it lasted): the recovery is logged once. */
  const recovered = (): { downForMs: number } | undefined => {
    if (failing === undefined) return undefined;
    const downForMs = Date.now() - failing.since;
    failing = undefined;
    return { downForMs };
  };

  const look = async (bucket: number): Promise<BucketLook> => {
    const stamp = stamps[bucket] as WriteStamp;
    const answer = await commands.revocationBucketCheck(ledgerKey(bucket), stamp.key, stamp.seen(), stamp.last(), String(Date.now()), String(STAMP_TTL_MS));
    const [born = '0', open, wentBack, closed = ''] = String(answer).split(':');
    return { bucket, born, open: open === '1', wentBack: wentBack === '1', closed };
  };

  const check = async (): Promise<void> => {
    // Revocations that missed Redis are written again first (no bucket closes for it: the write lands
    // when a close would). Taken before: one that misses Redis meanwhile is written next time.
    const rewrite = missing;
    missing = new Set();
    let rewritten: number | undefined;
    if (rewrite === 'all' || rewrite.size > 0) {
      try {
        rewritten = await reseed(rewrite === 'all' ? new Set(ALL_BUCKETS) : rewrite);
      } catch (err) {
        missing = together(rewrite, missing);
        throw err;
      }
    }
    // Where each bucket's server stood before it was read: a re-seed opens no bucket whose server changed
    // since (its writes may have gone to a server that is gone); the reader closes it, and it is read again.
    const tickets = ALL_BUCKETS.map((bucket) => core.ticketOf(bucket));
    // Every bucket at once (one script per slot): a shard that does not answer leaves its buckets for the
    // next look, and does not hold up the others.
    const reads = await Promise.allSettled(ALL_BUCKETS.map(look));
    const looks = reads.flatMap((read) => (read.status === 'fulfilled' ? [read.value] : []));
    const unreachable = reads.length - looks.length;
    // Nothing answered: Redis is down (the reason is the first bucket's).
    if (looks.length === 0) throw reads.find((read) => read.status === 'rejected')?.reason;
    const closed = looks.filter((found) => !found.open);
    if (closed.length === 0) {
      whole = true;
      if (unreachable > 0) throw new ShardsUnreachable(unreachable);
      const back = recovered();
      if (rewritten !== undefined) logger.warn({ sessions: rewritten, ...back }, 'revocations that missed Redis written again');
      else if (back !== undefined) logger.info(back, 'revocations checked again; bearer requests accepted again');
      return;
    }
    whole = false;
    const started = Date.now();
    const sessions = await reseed(new Set(closed.map((found) => found.bucket)));
    const opened = await Promise.all(
      closed.map(async (found) => {
        const ticket = tickets[found.bucket];
        if (ticket === undefined || !core.unchangedSince(found.bucket, ticket)) return false;
        return Number(await commands.revocationOpen(ledgerKey(found.bucket), found.born, found.closed)) === 1;
      }),
    );
    if (opened.includes(false)) {
      // Closed, lost or moved again while it was re-seeded (a server changed meanwhile): once more, shortly.
      // Not a failed look, nothing is unreachable, and not an operator's line: the re-seed that opens logs.
      const againMs = Math.min(RESEED_AGAIN_MS * 2 ** reseedsInARow, options.intervalMs);
      reseedsInARow += 1;
      logger.debug({ buckets: opened.filter((open) => !open).length, againMs }, 'revocation buckets closed again during their re-seed (a Redis server changed meanwhile); re-seeding again');
      setTimeout(() => {
        if (!stopping) void checks.runNow();
      }, againMs).unref();
      return;
    }
    reseedsInARow = 0;
    whole = true;
    if (unreachable > 0) throw new ShardsUnreachable(unreachable);
    const wentBack = closed.filter((found) => found.wentBack).length;
    const lost = closed.filter((found) => found.closed === '').length;
    const cause =
      wentBack > 0
        ? 'Redis holds fewer revocations than identity wrote (a lagging replica promoted?)'
        : lost > 0
          ? 'Redis lost its data'
          : 'a Redis server was replaced (a failover or a restart): its buckets were closed';
    logger.warn({ sessions, buckets: closed.length, tookMs: Date.now() - started, cause, ...recovered() }, 'revocation mirror re-seeded; bearer requests accepted again');
  };

  // One look at a time; one asked for during a look (a reconnect's) runs right after it.
  const checks = periodic(check, {
    intervalMs: options.intervalMs,
    onError: (err: unknown) => {
      if (!(err instanceof ShardsUnreachable)) whole = false;
      // One line when the looks start failing, with the reason (not the stack: it is always the client's
      // own); then a reminder at most every `reminderMs`, not one per look.
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
  // A server back or replaced: the stamps say at once whether it holds fewer revocations than written, and
  // buckets closed by a replacement are re-seeded as soon as their close has landed.
  const core = startReader(redis, { logger }, { changed: () => void checkNow(), closed: () => void checkNow() });
  checks.start();
  void checkNow();

  return {
    isRevoked: core.isRevoked,
    checkOf: core.checkOf,
    closeAll: core.closeAll,
    async revoke(token, expiresAt) {
      const until = revocationExpiry(expiresAt);
      if (until * 1000 <= Date.now()) return;
      await write(revocationBucket(token.sessionId), redis.multi().set(tokenKey(token), '1', 'EXAT', until));
    },
    async endSessions(sessionIds, latestExp) {
      const until = revocationExpiry(latestExp);
      if (sessionIds.length === 0 || until * 1000 <= Date.now()) return;
      // One transaction per bucket, in parallel: a cluster refuses one that spans slots.
      await Promise.all(
        [...byBucket(sessionIds, (sid) => sid)].map(([bucket, sids]) => {
          const transaction = redis.multi();
          for (const sid of sids) transaction.set(sessionKey(sid), '1', 'EXAT', until);
          return write(bucket, transaction);
        }),
      );
    },
    missed(sessionIds) {
      missing = together(missing, sessionIds === undefined ? 'all' : new Set(sessionIds.map(revocationBucket)));
    },
    checkNow,
    readiness: {
      name: 'revocations',
      check: async () => {
        if (!whole) throw new Error('the revocation mirror in Redis is not whole yet (being re-seeded, or Redis or Postgres unreachable)');
      },
    },
    async stop() {
      stopping = true;
      await core.stop();
      await checks.stop();
    },
  };
}
