/** Whose password check waits: the client key the gateway vouched for ('' without one), then the source address. */
export type Lane = readonly [clientKey: string, address: string];

/** The lane of work no caller is named for (an ADMIN's user creation, a password change). */
export const SHARED_LANE: Lane = ['', ''];

interface KeyLanes {
  /** Waiters of the key, all its addresses together. */
  size: number;
  /** Each address's waiters, first come first; the address next in turn first. */
  addresses: Map<string, Array<() => void>>;
}

/**
 * Waiters for the hashing threads, served in turn by caller: the client keys take turns, and within a key
 * its source addresses take turns, each address's waiters first come, first served. A caller flooding the
 * logins (an unauthenticated one needs no account) then delays its own checks, not every other caller's:
 * one turn per key, whatever the flood's size, and within a key one turn per address.
 */
export class CallerQueue {
  /** The keys with waiters, the key next in turn first. */
  readonly #keys = new Map<string, KeyLanes>();

  /**
   * How many waiters would be served before one that joins `lane` now, at most: its key's waiters ahead of
   * it (its address's, and one of each other address of the key per turn of its own), and one waiter of each
   * other key per turn of its key.
   */
  ahead([key, address]: Lane): number {
    const lanes = this.#keys.get(key);
    const mine = lanes?.addresses.get(address)?.length ?? 0;
    const addresses = (lanes?.addresses.size ?? 0) + (mine === 0 ? 1 : 0);
    // The turns its key takes before this waiter's.
    const keyTurns = Math.min(lanes?.size ?? 0, mine * addresses + addresses - 1);
    let ahead = keyTurns;
    for (const [other, { size }] of this.#keys) if (other !== key) ahead += Math.min(size, keyTurns + 1);
    return ahead;
  }

  /** Adds a waiter to `lane`. */
  push([key, address]: Lane, waiter: () => void): void {
    let lanes = this.#keys.get(key);
    if (lanes === undefined) this.#keys.set(key, (lanes = { size: 0, addresses: new Map() }));
    const waiters = lanes.addresses.get(address);
    if (waiters === undefined) lanes.addresses.set(address, [waiter]);
    else waiters.push(waiter);
    lanes.size += 1;
  }

  /** The waiter whose turn it is, taken out (its address and key go to the end of their turns), if any. */
  shift(): (() => void) | undefined {
    const next = this.#keys.entries().next();
    if (next.done === true) return undefined;
    const [key, lanes] = next.value;
    const [address, waiters] = lanes.addresses.entries().next().value as [string, Array<() => void>];
    const waiter = waiters.shift();
    lanes.size -= 1;
    lanes.addresses.delete(address);
    if (waiters.length > 0) lanes.addresses.set(address, waiters);
    this.#keys.delete(key);
    if (lanes.size > 0) this.#keys.set(key, lanes);
    return waiter;
  }
}
