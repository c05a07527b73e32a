import { assetText } from './paths.ts';

/**
 * The one answer to "has this slot lost writes I depend on?" (CONTRACT.md parts 13 and 14), for every
 * store that must not forget: the revocation buckets (@platform/auth) and the gateway's replay stores.
 *
 * The words, once:
 * - *slot*: the keys of one hash tag (one Redis Cluster slot; on one Redis, the same keys): one revocation
 *   bucket `{rv:<b>}`, one client key's replay store `{ck:<keyId>}`.
 * - *ledger*: the slot's hash; its `born` (ms) says since when the slot holds its data.
 * - *loss*: the slot's data, or its latest writes, are gone: its ledger is missing (created again, born
 *   now), or a writer's stamp holds less than the writer saw (born becomes now).
 * - *stamp*: one writer's count of its writes on a slot, counted in the step of each write; the writer
 *   remembers the highest count Redis answered (`WriteStamp`).
 * - *replaced*: another server than before holds the slot (service-kit's redis-topology.ts): a failover to
 *   a replica that may lag. Not a loss until a stamp or a missing ledger says so; a store whose readers
 *   cannot wait for that (the revocations) closes the slot at once.
 *
 * The Lua functions (lua/slot-ledger.lua: `slot_born`, `slot_behind`, `slot_count`) run inside each
 * store's own scripts, so that telling a loss costs no round trip of its own.
 */
export const SLOT_LEDGER_LUA: string = assetText(new URL('./lua/slot-ledger.lua', import.meta.url));

/**
 * How long a writer's stamp outlives its last write or check: a writer checks its own at least every few
 * seconds while it runs, so only the stamps of processes long gone expire.
 */
export const STAMP_TTL_MS = 24 * 60 * 60 * 1000;

/** One writer's stamp on one slot: its key, and the highest count Redis answered. */
export interface WriteStamp {
  /** The stamp's Redis key (below the client's prefix), unique to this writer. */
  readonly key: string;
  /** The highest count Redis answered, as a script argument. */
  seen(): string;
  /** When (ms, this process's clock) Redis answered it, as a script argument. */
  last(): string;
  /** Takes a count Redis answered after a write. */
  observe(count: number): void;
}

/** A writer's stamp at `key`, nothing seen yet. */
export function writeStamp(key: string): WriteStamp {
  let seen = 0;
  let last = 0;
  return {
    key,
    seen: () => String(seen),
    last: () => String(last),
    observe(count) {
      if (count > seen) {
        seen = count;
        last = Date.now();
      }
    },
  };
}
