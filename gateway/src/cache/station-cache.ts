// The gateway's cache of station answers (CONTRACT.md part 17): in memory, bounded by GATEWAY_CACHE_MB,
// least recently used out first (a list in use order beside the lookup Map: a hit moves its entry by
// relinking it, where deleting and setting it in the Map would make V8 rehash the Map's table once the
// holes fill it). An entry belongs to the station-data generation risk answered it from (its
// `X-Station-Generation`), and is served only while that generation is the current one as read from Redis
// within the last STALE_AFTER_MS: when risk loads a new generation it writes it there before serving it, so
// no gateway serves an old answer more than POLL_MS + STALE_AFTER_MS (< 2 s) later.
import { isDependencyUnavailable } from '@platform/errors';
import { Counter, Gauge } from 'prom-client';
import type { Logger, Metrics, Redis } from '@platform/service-kit';
import { newestStationGeneration } from '@platform/service-kit';

/** A stored answer: what a hit writes, and when and from which generation it was stored. */
export interface CachedAnswer {
  status: 200 | 404;
  /** The allow-listed answer headers (content type, validators, Cache-Control). */
  headers: Readonly<Record<string, string>>;
  body: Buffer;
  /** A 404's error body, parsed: a hit writes it with its own `timestamp` and `path`; undefined for a 200 (the body as it is). */
  error: Readonly<Record<string, unknown>> | undefined;
  etag: string | undefined;
  generation: number;
  storedAt: number;
  /** How long it may be served, ms (the answer's max-age; 60 s for a 404, as for the answers of its generation). */
  freshForMs: number;
  bytes: number;
}

export interface StationCache {
  /** The fresh entry of `key` from the current generation, or undefined (a miss). */
  get(key: string): CachedAnswer | undefined;
  /** Stores an answer of the current generation and returns the entry; an older one, or one too big, is not stored (undefined). */
  put(key: string, answer: Omit<CachedAnswer, 'bytes' | 'storedAt'>): CachedAnswer | undefined;
  /** Whether answers may be served and stored now: the current generation is known and recently confirmed. */
  usable(): boolean;
  /** One upstream request per key at a time: `load` runs for the first caller; the others share its result. */
  once<T>(key: string, load: () => Promise<T>): Promise<T>;
  hit(): void;
  miss(): void;
  /** Starts reading the generation from Redis every POLL_MS. */
  start(): void;
  stop(): Promise<void>;
  /** For tests and metrics: bytes held now. */
  bytes(): number;
}

/** How often the current generation is read from Redis. */
export const POLL_MS = 500;
/** After this long without a successful read, no entry is served or stored (Redis cannot vouch for the generation). */
export const STALE_AFTER_MS = 1400;
/** No single answer takes more than this share of the cache. */
const LARGEST_SHARE = 16;
/** What an entry costs beside its body: its key, headers and bookkeeping, roughly. */
const ENTRY_OVERHEAD = 512;

export interface StationCacheOptions {
  maxBytes: number;
  redis: Redis;
  metrics: Metrics;
  logger: Logger;
  now?: () => number;
}

/** An entry in use order: `older` towards the next to evict, `newer` towards the last used. */
interface Slot {
  readonly key: string;
  readonly entry: CachedAnswer;
  older: Slot | undefined;
  newer: Slot | undefined;
}

export function createStationCache(options: StationCacheOptions): StationCache {
  const now = options.now ?? Date.now;
  const slots = new Map<string, Slot>();
  // The ends of the use order: the least recently used (evicted first) and the most recently used.
  let oldest: Slot | undefined;
  let newest: Slot | undefined;
  const flights = new Map<string, Promise<unknown>>();
  let held = 0;
  let generation: number | undefined;
  let confirmedAt = -Infinity;
  let timer: NodeJS.Timeout | undefined;
  let reading: Promise<void> | undefined;
  let failing = false;
  // Whether the generation was ever read: the failures before that are of a process still starting.
  let everRead = false;

  const registers = [options.metrics.registry];
  const hits = new Counter({ name: 'gateway_cache_hits_total', help: 'Station answers served from the gateway\'s cache', registers });
  const misses = new Counter({ name: 'gateway_cache_misses_total', help: 'Cacheable station requests the cache could not answer (sent upstream, or joined a request already there)', registers });
  const evictions = new Counter({ name: 'gateway_cache_evictions_total', help: 'Entries dropped to stay within GATEWAY_CACHE_MB', registers });
  new Gauge({ name: 'gateway_cache_bytes', help: 'Bytes the station cache holds (bodies and an estimate of each entry\'s overhead)', registers, collect() {
    this.set(held);
  } });

  const unlink = (slot: Slot): void => {
    if (slot.older === undefined) oldest = slot.newer;
    else slot.older.newer = slot.newer;
    if (slot.newer === undefined) newest = slot.older;
    else slot.newer.older = slot.older;
    slot.older = undefined;
    slot.newer = undefined;
  };
  const append = (slot: Slot): void => {
    slot.older = newest;
    if (newest === undefined) oldest = slot;
    else newest.newer = slot;
    newest = slot;
  };
  const drop = (slot: Slot): void => {
    slots.delete(slot.key);
    unlink(slot);
    held -= slot.entry.bytes;
  };

  const usable = (): boolean => generation !== undefined && now() - confirmedAt < STALE_AFTER_MS;

  const read = async (): Promise<void> => {
    try {
      const next = await newestStationGeneration(options.redis);
      if (next !== generation) {
        // Another generation (or none: Redis lost it until risk writes it again): every entry is of the past.
        while (oldest !== undefined) drop(oldest);
        generation = next;
      }
      confirmedAt = now();
      if (failing) options.logger.info('station cache: the generation can be read again');
      failing = false;
      everRead = true;
    } catch (err) {
      // Before its first read the process is starting and Redis's own readiness check speaks for it (the
      // first poll runs before the connection is up): not a warning at every start.
      if (!everRead) options.logger.debug({ err }, 'station cache: the station generation cannot be read yet');
      else if (!failing) {
        // Redis down or slow (a blip): its reason, not the client's stack, which says nothing more.
        const fields = isDependencyUnavailable(err) ? { reason: (err as Error).message } : { err };
        options.logger.warn(fields, 'station cache: cannot read the station generation; answers go upstream until it can');
      }
      failing = everRead;
    }
  };

  return {
    get(key) {
      const slot = slots.get(key);
      if (slot === undefined) return undefined;
      const { entry } = slot;
      if (!usable() || entry.generation !== generation || now() - entry.storedAt >= entry.freshForMs) {
        drop(slot);
        return undefined;
      }
      // Now the most recently used.
      if (slot !== newest) {
        unlink(slot);
        append(slot);
      }
      return entry;
    },
    put(key, answer) {
      if (!usable() || answer.generation !== generation) return undefined;
      const bytes = answer.body.length + key.length + ENTRY_OVERHEAD;
      if (bytes > options.maxBytes / LARGEST_SHARE) return undefined;
      const old = slots.get(key);
      if (old !== undefined) drop(old);
      const slot: Slot = { key, entry: { ...answer, bytes, storedAt: now() }, older: undefined, newer: undefined };
      slots.set(key, slot);
      append(slot);
      held += bytes;
      while (held > options.maxBytes && oldest !== undefined) {
        drop(oldest);
        evictions.inc();
      }
      return slot.entry;
    },
    usable,
    once(key, load) {
      const running = flights.get(key);
      if (running !== undefined) return running as ReturnType<typeof load>;
      const flight = load().finally(() => flights.delete(key));
      flights.set(key, flight);
      return flight;
    },
    hit: () => hits.inc(),
    miss: () => misses.inc(),
    start() {
      if (timer !== undefined) return;
      const tick = () => {
        reading ??= read().finally(() => (reading = undefined));
      };
      tick();
      timer = setInterval(tick, POLL_MS);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await reading;
    },
    bytes: () => held,
  };
}
