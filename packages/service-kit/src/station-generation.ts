// The station data's generation as the gateway's cache reads it (CONTRACT.md part 17): risk writes the
// generation of the index it is about to serve into Redis, and marks every station answer with the
// generation it came from; a gateway serves a cached answer only while its generation is the one in Redis.
import type { Redis } from './redis.ts';

/** The Redis key (under the deployment's prefix) holding the newest generation any risk replica serves. */
export const STATION_GENERATION_KEY = 'station-index:generation';
/** The answer header (upstream only; the gateway never passes it on) naming the generation an answer came from. */
export const STATION_GENERATION_HEADER = 'x-station-generation';

/**
 * Raises the stored generation to `generation`, never lowers it: a replica still on the old index cannot undo a
 * newer one. A stored value that is no number (written by hand) is replaced.
 */
const RAISE = `local current = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if current < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) return 1 end
return 0`;

/** Writes `generation` as the current one unless a newer one is there. */
export async function publishStationGeneration(redis: Redis, generation: number): Promise<void> {
  await redis.eval(RAISE, 1, STATION_GENERATION_KEY, String(generation));
}

/** The newest generation any replica serves, as stored; undefined when none is (or not a whole number). */
export async function newestStationGeneration(redis: Redis): Promise<number | undefined> {
  const stored = Number(await redis.get(STATION_GENERATION_KEY));
  return Number.isSafeInteger(stored) && stored > 0 ? stored : undefined;
}

/** The stored generation as written (its text), or undefined when there is none. */
export async function storedStationGeneration(redis: Redis): Promise<string | undefined> {
  return (await redis.get(STATION_GENERATION_KEY)) ?? undefined;
}

/** Sets the stored generation from the text `from` to `to`, unless another value was written meanwhile; 1 when it did. */
const LOWER = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end
return 0`;

/**
 * Sets the stored generation, found as the text `from`, to `to`, the database's, unless it changed meanwhile;
 * true when it did. A stored generation above every replica's database (a risk database restored from an older
 * backup, a hand-written key, a number written as `1e9`) would otherwise stay, since `publishStationGeneration`
 * only raises it. The loader calls it once it stayed so for a poll interval (`createStationIndexLoader`, `lower`).
 */
export async function lowerStationGeneration(redis: Redis, from: string, to: number): Promise<boolean> {
  return Number(await redis.eval(LOWER, 1, STATION_GENERATION_KEY, from, String(to))) === 1;
}
