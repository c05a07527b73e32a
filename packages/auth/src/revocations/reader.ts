import { randomUUID } from 'node:crypto';
import { type Logger, REDIS_COMMAND_TIMEOUT_MS, type Redis, RedisServerUnknownError, type TopologyChange, redisTopology } from '@platform/service-kit';
import { ALL_BUCKETS, BUCKET_SCRIPTS, BUCKET_SLOTS, type BucketCommands, bucketsOn, ledgerKey, revocationBucket, sessionKeyIn, tokenKeyIn } from './buckets.ts';

/** Thrown by a check while the token's bucket is not known whole: a 503, never a token accepted on a partial blacklist. */
export class RevocationsUnavailableError extends Error {
  constructor() {
    super('the revocations of this token\'s bucket are not known whole (Redis lost data, or its server was replaced); identity is re-seeding them');
    this.name = 'RevocationsUnavailableError';
  }
}

/** What every verifier (the gateway, risk, identity's own bearer checks) asks of the revocations. */
export interface RevocationReader {
  /**
   * True when the token or its session was revoked. Rejects with `RevocationsUnavailableError` while the
   * token's bucket is closed (a loss not re-seeded yet), while this process holds it (its server was
   * replaced and the close has not landed yet), or when the answer may come from another server than the
   * one asked; with Redis's own error when Redis does not answer, and with service-kit's
   * `RedisServerUnknownError` when a connection came back and its server was not identified in time. Either
   * way the caller fails closed.
   */
  isRevoked(token: { tokenId: string; sessionId: string }): Promise<boolean>;
  /**
   * The same check for a caller that runs it inside a script of its own, on the same server (the gateway's
   * admission on one Redis, one command for both): the keys `is_revoked` reads (REVOCATION_LIBRARY_LUA), and the
   * verdict on what it found, as `isRevoked` resolves or rejects. Throws `RevocationsUnavailableError` at once
   * while this process holds the bucket. A check whose server is being identified has `onceKnown`: the caller
   * awaits it rather than send a command whose answer would be refused.
   */
  checkOf(token: { tokenId: string; sessionId: string }): RevocationCheck;
  /** Closes every bucket until identity re-seeds it: a loss found elsewhere on this Redis (the gateway's nonces gone back) may have taken revocations with it. */
  closeAll(): Promise<void>;
  /** Stops watching the servers (shutdown). */
  stop(): Promise<void>;
}

/** One token's revocation check, run by the caller (`RevocationReader.checkOf`). */
export interface RevocationCheck {
  /** KEYS of `is_revoked`: the bucket's ledger, the token's key, the session's key (below the client's prefix). */
  keys: readonly [ledger: string, token: string, session: string];
  /**
   * True when revoked; throws `RevocationsUnavailableError` when the bucket is closed (`found` -1) or its
   * server changed meanwhile. A promise when the answer came on a connection that came back while the check
   * was on its way (sent again), before its server was identified: settled once it is (at most
   * IDENTIFY_WAIT_MS later), rejecting as the throw does when it was another server, and with
   * `RedisServerUnknownError` when it was not known in time or the connection was lost again.
   */
  verdict(found: number): boolean | Promise<boolean>;
  /**
   * Set while the bucket's server is being identified (its connection came back, or on a cluster is made
   * again, and INFO has not answered yet): `verdict` would refuse whatever is found. The check taken again
   * once the server is known, at most IDENTIFY_WAIT_MS later; rejects with service-kit's
   * `RedisServerUnknownError` when it is not known by then or the connection was lost again (a 503 as for an
   * unreachable Redis), with `RevocationsUnavailableError` when it was replaced (the bucket held).
   */
  onceKnown?: () => Promise<RevocationCheck>;
}

export interface ReaderOptions {
  logger: Pick<Logger, 'debug'>;
}

/** What a writer (writer.ts) hears of the reader it is built on. */
export interface ReaderHooks {
  /** Every change of the servers (a connection back, a server replaced): a writer checks its stamps. */
  changed?: (change: TopologyChange) => void;
  /** Buckets whose close after a replacement has landed: a writer re-seeds them. */
  closed?: (buckets: readonly number[]) => void;
}

/** The reader as a writer uses it: and where each bucket's server stands (a re-seed opens only a bucket whose server did not change since it read it). */
export interface ReaderCore extends RevocationReader {
  /** The bucket's ticket (redis-topology.ts), undefined while held or while its server is not known. */
  ticketOf(bucket: number): string | undefined;
  /** Whether the bucket's server is still the one of `ticket`, and the bucket not held. */
  unchangedSince(bucket: number, ticket: string): boolean;
}

/**
 * How long a check waits for its server to be identified after a connection came back: the time a command
 * may take. A mere reconnect is then a moment's wait, not a 503 for every token of the server's buckets
 * (CONTRACT.md part 14, amended); the two within the gateway's 1 s fail-closed promise.
 */
const IDENTIFY_WAIT_MS = REDIS_COMMAND_TIMEOUT_MS;

/** How long a reader waits before it tries again to close a bucket whose server did not answer. */
const CLOSE_RETRY_MS = 200;

/** KEYS of `is_revoked` for `token`, of bucket `bucket`. */
const keysOf = (bucket: number, token: { tokenId: string; sessionId: string }): RevocationCheck['keys'] => [ledgerKey(bucket), tokenKeyIn(bucket, token.tokenId), sessionKeyIn(bucket, token.sessionId)];

/** The verdict of a check sent before its server was known: refused, whatever was found. */
const refused = (): never => {
  throw new RevocationsUnavailableError();
};

/** A verifier's reader of the revocations on `redis`, watching its servers until `stop`. */
export function createRevocationReader(redis: Redis, options: ReaderOptions): RevocationReader {
  return startReader(redis, options, {});
}

/**
 * The reader, with the hooks a writer needs. A server replaced (service-kit's redis-topology.ts: a failover,
 * perhaps to a replica that lagged) may have lost revocations that nobody has noticed yet, not even
 * identity: so its buckets are *held* at once (this process's checks on them fail closed without asking)
 * and closed in Redis; once a bucket's close has landed the hold is let go, and the closed bucket keeps
 * every process out until identity has re-seeded it: about a second. A connection that came back to the
 * same server changes nothing. A close that fails (the server is still down) is tried again every
 * CLOSE_RETRY_MS, with one debug line per outage.
 */
export function startReader(redis: Redis, options: ReaderOptions, hooks: ReaderHooks): ReaderCore {
  for (const [name, script] of Object.entries(BUCKET_SCRIPTS)) redis.defineCommand(name, script);
  const commands = redis as unknown as BucketCommands;
  const topology = redisTopology(redis);
  /** Held buckets, each with the number of the replacement that held it last. */
  const holds = new Map<number, number>();
  let replacements = 0;
  let closing = false;
  let stopped = false;
  let failing = false;

  const close = (bucket: number): Promise<string> => commands.revocationClose(ledgerKey(bucket), String(Date.now()), randomUUID());

  const closeHeld = async (): Promise<void> => {
    if (closing) return;
    closing = true;
    try {
      while (holds.size > 0 && !stopped && redis.status !== 'end') {
        const batch = [...holds];
        const results = await Promise.allSettled(batch.map(([bucket]) => close(bucket)));
        if (stopped) return;
        const landed = batch.filter(([bucket, heldAt], i) => {
          // A bucket held again meanwhile (another replacement) needs a close of its own.
          if (results[i]?.status !== 'fulfilled' || holds.get(bucket) !== heldAt) return false;
          holds.delete(bucket);
          return true;
        });
        const failure = results.find((result) => result.status === 'rejected');
        if (failure !== undefined && !failing) options.logger.debug({ err: failure.reason }, 'could not close the revocation buckets of a replaced Redis server yet; trying again');
        failing = failure !== undefined;
        if (landed.length > 0) hooks.closed?.(landed.map(([bucket]) => bucket));
        if (failure !== undefined) await new Promise((resolve) => setTimeout(resolve, CLOSE_RETRY_MS).unref());
      }
    } finally {
      closing = false;
    }
  };

  const unsubscribe = topology.subscribe((change) => {
    if (change.replaced) {
      replacements += 1;
      for (const bucket of bucketsOn(change.slots)) holds.set(bucket, replacements);
      void closeHeld();
    }
    hooks.changed?.(change);
  });

  /** The check of `token`, of bucket `bucket`. */
  const checkIn = (bucket: number, token: { tokenId: string; sessionId: string }): RevocationCheck => {
    if (holds.has(bucket)) throw new RevocationsUnavailableError();
    const slot = BUCKET_SLOTS[bucket] ?? 0;
    const ticket = topology.ticket(slot);
    if (ticket === undefined && topology.identifying(slot)) {
      return { keys: keysOf(bucket, token), verdict: refused, onceKnown: () => known(bucket, token, slot) };
    }
    // Asked even without a ticket. While its server is not connected: held against the ticket the slot will
    // have if the server comes back the same, since an auto-pipeline sends the command at the loop's next turn,
    // maybe on the connection that came back meanwhile (refused as "being restored" before: 21-36 answers per
    // 25 s of blips in an outside attack); on a cluster the command is what connects the node again. After a
    // MOVED the slot's route is unknown (no expected ticket): the answer is not trusted.
    const expected = ticket ?? topology.expected(slot);
    return {
      keys: keysOf(bucket, token),
      verdict(found) {
        if (found < 0 || expected === undefined || holds.has(bucket)) throw new RevocationsUnavailableError();
        if (topology.unchanged(slot, expected)) return found > 0;
        // Answered on a connection that came back, before its server was identified (a check sent again, or sent
        // by an auto-pipeline after the reconnect): trusted once it is found the same.
        const confirmed = topology.confirmed(slot, expected, IDENTIFY_WAIT_MS);
        if (confirmed === undefined) throw new RevocationsUnavailableError();
        return confirmed.then((same) => {
          if (same && !holds.has(bucket)) return found > 0;
          // Not identified in time, or lost again: Redis could not be asked, nothing known lost.
          if (!holds.has(bucket) && topology.ticket(slot) === undefined) throw new RedisServerUnknownError();
          throw new RevocationsUnavailableError();
        });
      },
    };
  };
  const known = async (bucket: number, token: { tokenId: string; sessionId: string }, slot: number): Promise<RevocationCheck> => {
    await topology.known(slot, IDENTIFY_WAIT_MS);
    // Not known in time, or the connection lost again: refused without asking, as when Redis cannot be
    // reached. Known as another server: its bucket is held (checkIn refuses it as being restored).
    if (topology.ticket(slot) === undefined) throw new RedisServerUnknownError();
    return checkIn(bucket, token);
  };
  const checkOf = (token: { tokenId: string; sessionId: string }): RevocationCheck => checkIn(revocationBucket(token.sessionId), token);
  const ticketOf = (bucket: number): string | undefined => (holds.has(bucket) ? undefined : topology.ticket(BUCKET_SLOTS[bucket] ?? 0));
  return {
    ticketOf,
    unchangedSince: (bucket, ticket) => ticketOf(bucket) === ticket,
    checkOf,
    async isRevoked(token) {
      let check = checkOf(token);
      if (check.onceKnown !== undefined) check = await check.onceKnown();
      return check.verdict(await commands.revocationCheck(...check.keys, String(Date.now())));
    },
    async closeAll() {
      await Promise.all(ALL_BUCKETS.map(close));
    },
    async stop() {
      stopped = true;
      unsubscribe();
      topology.stop();
    },
  };
}
