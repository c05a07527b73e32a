import { ServiceUnavailableError, isDependencyUnavailable } from '@platform/errors';
import { type Logger, type ReadinessCheck, periodic } from '@platform/service-kit';
import type { Knex } from '@platform/service-kit/database';
import { type StationIndex, buildStationIndex } from './station-index.ts';
import { readStationData, readStationDataVersion } from './weather-stations.repository.ts';

/** Where requests get the station index from: the one currently swapped in, if any. */
export interface StationIndexSource {
  current(): StationIndex | undefined;
}

/** Keeps a station index in step with the database. */
export interface StationIndexLoader extends StationIndexSource {
  /**
   * Rebuilds the index when the data version moved (or none is loaded yet) and swaps it in; resolves true
   * when it did. Never rejects: a failure is logged and the previous index keeps serving.
   */
  refresh(): Promise<boolean>;
  /** Loads once, then checks the version every poll interval. */
  start(): Promise<void>;
  /** Stops polling and waits for a reload in progress, so the pool can close under it. */
  stop(): Promise<void>;
}

export interface StationIndexLoaderOptions {
  db: Knex;
  logger: Logger;
  /** How often to ask Postgres whether the station data changed. */
  pollIntervalMs: number;
  /**
   * Tells the gateways' caches which generation is about to be served (CONTRACT.md part 17): called with the
   * new version before it is swapped in (a failure keeps the previous index, tried again next poll), and
   * with the current one at every poll (so a Redis that lost it has it back within one interval).
   */
  publish?: (version: number) => Promise<void>;
  /**
   * The newest generation any replica serves (CONTRACT.md part 17: Redis's, which a replica writes before it
   * serves a new one), read every FOLLOW_MS: a newer one than this replica's reloads it at once, not at its
   * next poll, so that no replica answers a gateway's miss from the old generation for longer than that
   * read and a load take after the first one serves the new. Undefined when nothing is stored; a failure
   * changes nothing (the poll still finds the change).
   */
  newest?: () => Promise<number | undefined>;
  /** The stored generation as written (its text); undefined when none is. */
  stored?: () => Promise<string | undefined>;
  /**
   * Sets the stored generation, found as the text `from`, to the database's `to` unless it changed meanwhile
   * (Redis's); true when it did. Called when two reads a poll interval apart found the database at this
   * replica's version and the same stored text above it, or no whole number: no replica serves that one (a
   * database restored from an older backup, a hand-written key), and while it stays no replica follows another
   * (`newest` is above them all) and no gateway keeps an answer (its generation is not the stored one). One
   * poll is not enough: a replica that read the database just before a change would lower a generation
   * another replica has just published.
   */
  lower?: (from: string, to: number) => Promise<boolean>;
}

/** How often a replica reads the newest generation another replica serves (`newest`). */
export const FOLLOW_MS = 500;

/**
 * Polls the `station_data_version` row, which a trigger bumps with every change to the station tables.
 * One indexed row read per interval per replica is cheap, survives connection loss without a dedicated
 * LISTEN connection, and a change is picked up within one interval. The new index is built aside and
 * swapped in with one assignment, so requests never see a half-built index and never wait for a build.
 */
export function createStationIndexLoader(options: StationIndexLoaderOptions): StationIndexLoader {
  const { db, logger } = options;
  let index: StationIndex | undefined;
  let failing = false;

  // The stored generation (its text) a poll found above the database's version or no whole number, and when (`lower`).
  let storedAbove: { text: string; since: number } | undefined;
  const lowerStoredAbove = async (version: number): Promise<void> => {
    if (options.stored === undefined || options.lower === undefined) return;
    const text = await options.stored();
    const stored = text === undefined || !/^[0-9]{1,16}$/.test(text) ? undefined : Number(text);
    if (text === undefined || (stored !== undefined && Number.isSafeInteger(stored) && stored <= version)) {
      storedAbove = undefined;
      return;
    }
    const now = Date.now();
    if (storedAbove?.text !== text) {
      storedAbove = { text, since: now };
      return;
    }
    if (now - storedAbove.since < options.pollIntervalMs) return;
    storedAbove = undefined;
    if (await options.lower(text, version)) {
      logger.warn({ stored: text, version }, 'the stored station generation stayed above the database\'s (or no number) for a poll interval: set to the database\'s');
    }
  };

  const load = async (): Promise<boolean> => {
    const version = await readStationDataVersion(db);
    if (index !== undefined && version === index.version) {
      await options.publish?.(version);
      await lowerStoredAbove(version);
      return false;
    }
    storedAbove = undefined;
    const next = buildStationIndex(await readStationData(db));
    const previousVersion = index?.version;
    // Published first: a gateway drops its answers of the old generation before this replica serves the new one.
    await options.publish?.(next.version);
    index = next;
    logger.info(
      { version: next.version, previousVersion, ...next.counts, unmatchedServings: next.unmatchedServings },
      'station index loaded',
    );
    return true;
  };

  const reload = async (): Promise<boolean> => {
    const swapped = await load();
    if (failing) logger.info('station index reload works again');
    failing = false;
    return swapped;
  };

  // One reload at a time; the poll alone does not keep a process alive that is otherwise done.
  const reloads = periodic(reload, {
    intervalMs: options.pollIntervalMs,
    onError: (err) => {
      // Once per outage: a poll every few seconds must not flood the log. At error with the stack but when
      // Postgres or Redis (the generation's publication) is down or too slow: then at warn with its reason, as
      // the client's own line tells the outage (a Redis blip was an error line with a stack).
      const message = index === undefined ? 'station index could not be loaded; not ready' : 'station index reload failed; serving the previous index';
      if (failing) logger.debug({ err }, message);
      else if (isDependencyUnavailable(err)) logger.warn({ reason: (err as Error).message, version: index?.version }, message);
      else logger.error({ err, version: index?.version }, message);
      failing = true;
    },
  });
  const refresh = async (): Promise<boolean> => (await reloads.runNow()) ?? false;

  // Each newer generation asked for once: a stored one the database does not have (another deployment's,
  // a restored backup) costs one version read, not one every FOLLOW_MS. Once such a one stayed a poll interval
  // (`storedAbove`), the poll that sets it back comes now, not at the next poll (up to another interval later).
  let followed: number | undefined;
  const follow = periodic(
    async () => {
      if (storedAbove !== undefined && Date.now() - storedAbove.since >= options.pollIntervalMs) {
        await refresh();
        return;
      }
      const newest = await options.newest?.();
      if (newest === undefined || newest === followed || index === undefined || newest <= index.version) return;
      followed = newest;
      await refresh();
    },
    { intervalMs: FOLLOW_MS, onError: (err) => logger.debug({ err }, 'could not read the newest station generation; the poll finds a change') },
  );

  return {
    current: () => index,
    refresh,
    async start() {
      await refresh();
      reloads.start();
      if (options.newest !== undefined) follow.start();
    },
    stop: async () => {
      await Promise.all([follow.stop(), reloads.stop()]);
    },
  };
}

/** Readiness: the index is loaded, so requests can be answered without the database. */
export function stationIndexCheck(source: StationIndexSource): ReadinessCheck {
  return {
    name: 'station-index',
    check: async () => {
      if (source.current() === undefined) throw new Error('station index not loaded yet');
    },
  };
}

/** The loaded index; 503 until the first load succeeded. */
export function requireStationIndex(source: StationIndexSource): StationIndex {
  const index = source.current();
  if (index === undefined) throw new ServiceUnavailableError('Station data is not loaded yet; try again shortly');
  return index;
}
