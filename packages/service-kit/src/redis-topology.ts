import type * as IORedis from 'ioredis';
import { MOVED_EVENT, type Redis, isCluster, nodeKeyOf, slotRoutes } from './redis.ts';

/**
 * Which server holds each key of the environment's Redis, as far as a client can tell (CONTRACT.md parts
 * 13 and 14), from ioredis' slot map (`slotRoutes`, redis.ts). A connection that drops and comes back to the
 * same server (the same `run_id` and replication id, as INFO tells them) changed nothing; another server
 * behind the same address (a restart), or a slot now served by a master this client did not know as it is
 * (a failover, perhaps to a replica that lagged), is a *replaced* server: writes made to the one before may
 * be gone. A slot moved to a master known and still the same server (a resharding) lost nothing.
 *
 * Answers are judged by *tickets* (`ticket`, `unchanged`): while the connection to a key's server has been
 * lost and the server it came back to is not yet known, no ticket is given; an answer whose ticket changed
 * while it was on its way came from another server than the one asked.
 */
export interface RedisTopology {
  /**
   * Where `slot` (a key's cluster slot; on one Redis any number) stands before a command is sent:
   * undefined while its connection was lost and the server it reconnected to is not known yet, or while
   * the client routes the slot elsewhere than its last slot map said (a MOVED followed); else a ticket
   * to hold the answer against (`unchanged`).
   */
  ticket(slot: number): string | undefined;
  /**
   * The ticket `slot` has, or, while its connection was lost, the one it will have if its server comes back
   * the same: what the answer to a command asked now is held against. Without a connection a command is
   * not sent at once, but one an auto-pipeline takes (sent at the loop's next turn) may go out on the
   * connection that came back meanwhile. Undefined where `ticket` is undefined for any other reason (a MOVED
   * followed, a move being judged).
   */
  expected(slot: number): string | undefined;
  /** Whether `slot` still stands where `ticket` said: the answer came from the server that was asked. */
  unchanged(slot: number, ticket: string): boolean;
  /**
   * Whether `slot` has no ticket only because its server is being identified: its connection came back (or,
   * on a cluster, is being made again) and INFO has not said yet who answers. `known` waits for that.
   */
  identifying(slot: number): boolean;
  /**
   * Settles once `slot`'s server is known again (INFO answered on the connection that came back, a
   * replacement told to the subscribers first), when its connection is lost again, or after `withinMs`,
   * whichever comes first; at once when it is not being identified. On a cluster it makes the node's
   * connection, which the client makes lazily.
   */
  known(slot: number, withinMs: number): Promise<void>;
  /**
   * For an answer read under `ticket` that `unchanged` refuses only because `slot`'s server is being
   * identified: the command was on its way when the connection dropped, the client sent it again on the
   * connection that came back, and the server answered it before INFO (ioredis writes what it sends again
   * before the connection's `ready`, so before the watch's INFO). Settles true once that connection's INFO
   * finds the server of `ticket`; false when it finds another, when the connection is lost again first, or
   * after `withinMs`. Undefined when the slot's server is not being identified: nothing to wait for.
   */
  confirmed(slot: number, ticket: string, withinMs: number): Promise<boolean> | undefined;
  /**
   * Hears every change: the connection to a server came back (`replaced` false: the same server) or a
   * server was replaced (`replaced` true), with the slots it holds (`'all'` on one Redis).
   */
  subscribe(listener: (change: TopologyChange) => void): () => void;
  stop(): void;
}

/**
 * A connection to Redis came back and its server could not be identified in time: INFO did not answer within
 * the wait, or the connection was lost again first. Nothing was lost that anyone knows of, but an answer on
 * that connection cannot be trusted yet: refused as when Redis cannot be reached (a 503 a retry cures,
 * `isDependencyUnavailable` knows it by its name), not as a loss being restored.
 */
export class RedisServerUnknownError extends Error {
  constructor() {
    super('the Redis server of a connection that came back was not identified in time (INFO did not answer, or the connection was lost again)');
    this.name = 'RedisServerUnknownError';
  }
}

export interface TopologyChange {
  slots: readonly number[] | 'all';
  /** Another server than before holds them: writes made before may be gone. */
  replaced: boolean;
}

/** What a client knows of one server: trusted from its first connection, unsure from a loss until INFO says who came back. */
interface ServerState {
  /** `run_id/master_replid` as INFO said last; undefined before the first answer. */
  identity: string | undefined;
  /** The connection was lost since the identity was read: answers are not trusted until it is read again. */
  unsure: boolean;
  /** Counts the replacements of the server at this address. */
  generation: number;
}

const SLOTS = 16_384;

/** How soon, and how often, a server is asked again who it is when INFO failed on a connection still up. */
const IDENTIFY_RETRY_MS = 100;
const IDENTIFY_RETRIES = 5;

/** `run_id/master_replid` from an INFO answer, or undefined when it names neither (a stand-in that does not tell). */
function identityOf(info: string): string | undefined {
  const field = (name: string): string | undefined => new RegExp(`^${name}:(\\S+)`, 'm').exec(info)?.[1];
  const runId = field('run_id');
  return runId === undefined ? undefined : `${runId}/${field('master_replid') ?? ''}`;
}

/** The master node key of every slot, as `cluster` routes it now. */
function slotMasters(cluster: IORedis.Cluster): Array<string | undefined> {
  const slots = slotRoutes(cluster);
  return Array.from({ length: SLOTS }, (_, slot) => slots[slot]?.[0]);
}

/**
 * Watches `redis`: asks each server who it is (INFO) on every connection, and compares. Costs one INFO per
 * connection made; nothing per command. `stop` removes every listener.
 */
export function redisTopology(redis: Redis): RedisTopology {
  const listeners = new Set<(change: TopologyChange) => void>();
  const tell = (change: TopologyChange): void => {
    if (change.slots !== 'all' && change.slots.length === 0) return;
    for (const listener of listeners) listener(change);
  };
  const servers = new Map<string, ServerState>();
  // Who waits (`known`) for each server to be identified: each entry settles its own wait.
  const waiting = new Map<string, Set<() => void>>();
  const release = (key: string): void => {
    const waits = waiting.get(key);
    if (waits === undefined) return;
    waiting.delete(key);
    for (const settle of waits) settle();
  };
  const waitFor = (key: string, withinMs: number): Promise<void> =>
    new Promise((resolve) => {
      let waits = waiting.get(key);
      if (waits === undefined) waiting.set(key, (waits = new Set()));
      const settle = (): void => {
        clearTimeout(timer);
        waits.delete(settle);
        resolve();
      };
      const timer = setTimeout(settle, withinMs);
      waits.add(settle);
    });
  // Set by `stop`: a retry of INFO that comes after it asks nothing.
  let stopped = false;
  /**
   * The watch over one Redis or a cluster, from how it dates a slot's server and finds the server at which
   * a slot is being identified, and how it stops watching.
   */
  const topology = (
    ticketAt: (slot: number, evenUnsure: boolean) => string | undefined,
    identifyingAt: (slot: number) => string | undefined,
    known: RedisTopology['known'],
    unwatch: () => void,
  ): RedisTopology => {
    const ticket = (slot: number): string | undefined => ticketAt(slot, false);
    return {
      ticket,
      expected: (slot) => ticketAt(slot, true),
      unchanged: (slot, seen) => ticket(slot) === seen,
      identifying: (slot) => identifyingAt(slot) !== undefined,
      known,
      confirmed: (slot, seen, withinMs) => {
        const key = identifyingAt(slot);
        // The wait ends when INFO answers on the connection that came back, or when it is lost (no ticket then).
        return key === undefined ? undefined : waitFor(key, withinMs).then(() => ticket(slot) === seen);
      },
      subscribe: (listener) => {
        listeners.add(listener);
        return () => void listeners.delete(listener);
      },
      stop: () => {
        stopped = true;
        unwatch();
        listeners.clear();
        for (const key of [...waiting.keys()]) release(key);
      },
    };
  };
  const stateOf = (key: string): ServerState => {
    let state = servers.get(key);
    if (state === undefined) {
      state = { identity: undefined, unsure: false, generation: 0 };
      servers.set(key, state);
    }
    return state;
  };

  /** Reads who answers on `connection` (at `key`) now, and what that changes. */
  const identify = async (connection: IORedis.Redis, key: string, slotsOf: () => readonly number[] | 'all', attempt = 0): Promise<void> => {
    let identity: string | undefined;
    try {
      identity = identityOf(String(await connection.info()));
    } catch {
      // Lost again before it answered: the next connection asks again. Still connected (the answer timed out
      // on a busy process): asked again on this one, a few times, waiting longer each time. Else the server
      // stayed unknown until the connection next dropped: after a loss, unsure, so no ticket at all (every
      // answer of its slots refused), and never read, so that next drop looked like a replacement.
      if (connection.status === 'ready' && attempt < IDENTIFY_RETRIES) {
        setTimeout(() => {
          if (!stopped && connection.status === 'ready') void identify(connection, key, slotsOf, attempt + 1);
        }, IDENTIFY_RETRY_MS * 2 ** attempt).unref();
      }
      return;
    }
    const state = stateOf(key);
    const before = state.identity;
    const wasUnsure = state.unsure;
    state.identity = identity;
    state.unsure = false;
    if (wasUnsure) {
      // Nobody knows who answered before the loss when nobody asked: another server, to be safe.
      const replaced = before === undefined || identity === undefined || identity !== before;
      if (replaced) state.generation += 1;
      tell({ slots: slotsOf(), replaced });
    }
    // After the subscribers heard it: a wait settled by a replacement finds its slots held.
    release(key);
  };

  if (!isCluster(redis)) {
    const key = '';
    const lost = (): void => {
      // Only a connection that was made: a first connection's attempts lose nothing.
      if (servers.has(key)) stateOf(key).unsure = true;
      // Lost again before INFO answered: who waited is refused now, not when the wait is over.
      release(key);
    };
    const ready = (): void => {
      stateOf(key);
      void identify(redis, key, () => 'all');
    };
    redis.on('close', lost);
    redis.on('ready', ready);
    if (redis.status === 'ready') ready();
    // Connected again, INFO not answered yet. While disconnected a command fails at once (no offline queue), so nothing waits.
    const identifying = (): boolean => servers.get(key)?.unsure === true && redis.status === 'ready';
    return topology(
      (_slot, evenUnsure) => {
        const state = servers.get(key);
        if (state?.unsure === true && !evenUnsure) return undefined;
        return String(state?.generation ?? 0);
      },
      () => (identifying() ? key : undefined),
      (_slot, withinMs) => (identifying() ? waitFor(key, withinMs) : Promise.resolve()),
      () => {
        redis.off('close', lost);
        redis.off('ready', ready);
      },
    );
  }

  const cluster = redis;
  let masters = slotMasters(cluster);
  const slotsAt = (key: string): number[] => {
    const held: number[] = [];
    for (let slot = 0; slot < SLOTS; slot += 1) if (masters[slot] === key) held.push(slot);
    return held;
  };
  /** Where the client sends `slot`'s commands now: a MOVED points it elsewhere before any refresh. */
  const routeOf = (slot: number): string => slotRoutes(cluster)[slot]?.[0] ?? '';
  // Each slot's MOVEDs followed: an answer across one came from another master than the one asked, even
  // when a refresh from before the MOVED points the slot back before the answer is read.
  const moves = new Uint32Array(SLOTS);
  const followedMoved = (): void => {
    for (let slot = 0; slot < SLOTS; slot += 1) if (masters[slot] !== undefined && routeOf(slot) !== masters[slot]) moves[slot] = (moves[slot] ?? 0) + 1;
  };
  // Each node connection of the pool, as it comes and goes (a node's connection is not re-made: a new one
  // replaces it, under the same key).
  const watched = new Map<IORedis.Redis, () => void>();
  const watchNode = (node: IORedis.Redis): void => {
    if (watched.has(node)) return;
    const key = nodeKeyOf(node);
    const ready = (): void => {
      stateOf(key);
      void identify(node, key, () => slotsAt(key));
    };
    node.on('ready', ready);
    watched.set(node, () => node.off('ready', ready));
    if (node.status === 'ready') ready();
  };
  const nodeGone = (node: IORedis.Redis): void => {
    watched.get(node)?.();
    watched.delete(node);
    const key = nodeKeyOf(node);
    if (servers.has(key)) stateOf(key).unsure = true;
    // A master that could not be connected (down, failing over) ends its connection: who waited is refused now.
    release(key);
  };
  // Slots moved to a master this client knew, until INFO says whether it is still that server: no ticket.
  const confirming = new Uint32Array(SLOTS);
  /**
   * `slots` are now served by the master at `key`. A master this client knew (its identity read, no loss
   * since) that INFO finds the same server took them by a resharding: MIGRATE carries every key, so nothing
   * is lost. Any other (a replica promoted by a failover, perhaps lagging; a server never asked; one that
   * does not answer or answers as another) is a replaced server for them.
   */
  const judgeMove = async (key: string, slots: number[]): Promise<void> => {
    const state = servers.get(key);
    const node = cluster.nodes('master').find((candidate) => nodeKeyOf(candidate) === key);
    const known = state?.identity;
    if (state === undefined || known === undefined || state.unsure || node === undefined) {
      tell({ slots, replaced: true });
      return;
    }
    for (const slot of slots) confirming[slot] = (confirming[slot] ?? 0) + 1;
    let identity: string | undefined;
    try {
      identity = identityOf(String(await node.info()));
    } catch {
      identity = undefined;
    } finally {
      for (const slot of slots) confirming[slot] = (confirming[slot] ?? 1) - 1;
    }
    const same = identity !== undefined && identity === known && state.identity === known && !state.unsure;
    tell({ slots, replaced: !same });
  };
  const refreshed = (): void => {
    const now = slotMasters(cluster);
    const moved = new Map<string, number[]>();
    for (let slot = 0; slot < SLOTS; slot += 1) {
      const to = now[slot];
      if (masters[slot] === undefined || to === masters[slot]) continue;
      let slots = moved.get(to ?? '');
      if (slots === undefined) moved.set(to ?? '', (slots = []));
      slots.push(slot);
    }
    masters = now;
    for (const [key, slots] of moved) void judgeMove(key, slots);
  };
  /**
   * `slot`'s master is one this client knew, unsure since its connection was dropped (a reset of the pool
   * makes every node's connection again, lazily: the first command routed to it connects it), while the
   * slot map stands and the cluster is connected.
   */
  const identifyingAt = (slot: number): string | undefined => {
    const route = routeOf(slot);
    if (cluster.status !== 'ready' || route === '' || route !== masters[slot] || servers.get(route)?.unsure !== true) return undefined;
    return route;
  };
  const knownAt = (slot: number, withinMs: number): Promise<void> => {
    const route = identifyingAt(slot);
    if (route === undefined) return Promise.resolve();
    const wait = waitFor(route, withinMs);
    const node = cluster.nodes('master').find((candidate) => nodeKeyOf(candidate) === route);
    // Its 'ready' asks INFO (watchNode).
    if (node?.status === 'wait') node.connect().catch(() => undefined);
    return wait;
  };
  for (const node of cluster.nodes('all')) watchNode(node);
  cluster.on('+node', watchNode);
  cluster.on('-node', nodeGone);
  cluster.on('refresh', refreshed);
  cluster.on(MOVED_EVENT, followedMoved);
  return topology(
    (slot, evenUnsure) => {
      const route = routeOf(slot);
      // Followed a MOVED the last slot map does not know: the refresh it started will say whether it moved.
      if (route === '' || route !== (masters[slot] ?? route) || confirming[slot] !== 0) return undefined;
      const state = servers.get(route);
      if (state?.unsure === true && !evenUnsure) return undefined;
      return `${route}#${state?.generation ?? 0}#${moves[slot] ?? 0}`;
    },
    identifyingAt,
    knownAt,
    () => {
      cluster.off('+node', watchNode);
      cluster.off('-node', nodeGone);
      cluster.off('refresh', refreshed);
      cluster.off(MOVED_EVENT, followedMoved);
      for (const unwatch of watched.values()) unwatch();
      watched.clear();
    },
  );
}
