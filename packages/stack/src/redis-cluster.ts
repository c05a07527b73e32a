import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { killedOnExit } from './exit-kill.ts';
import { freePorts } from './ports.ts';

const run = promisify(execFile);

/** One redis-server of a local cluster. */
export interface ClusterNode {
  port: number;
  /** `host:port`, as REDIS_CLUSTER_NODES lists it. */
  address: string;
  pid(): number | undefined;
}

/**
 * A Redis Cluster of a test file (CONTRACT.md part 14): 3 masters with a replica each, Debian's
 * `redis-server` in cluster mode on free ports, without persistence, in a temporary directory.
 */
export interface LocalRedisCluster {
  nodes: readonly ClusterNode[];
  /** REDIS_CLUSTER_NODES for the processes under test: every node, comma-separated. */
  seeds: string;
  /** Runs `redis-cli` against one node and returns its text answer (`CLUSTER NODES`, `FLUSHALL`…). */
  cli(port: number, ...args: string[]): Promise<string>;
  /** The ports of the masters now, and which replica follows each (from `CLUSTER NODES`). */
  masters(): Promise<Array<{ port: number; replicaPort: number | undefined; slots: string[] }>>;
  /** The port of the master serving `slot` now. */
  masterOfSlot(slot: number): Promise<number>;
  /**
   * Moves `slot` with its keys to the master on `toPort`, as a resharding does (`CLUSTER SETSLOT …
   * IMPORTING/MIGRATING`, `MIGRATE`, then `SETSLOT … NODE` on the destination, the source and the other
   * masters, in that order): clients meet ASK while it moves and MOVED after.
   */
  moveSlot(slot: number, toPort: number): Promise<void>;
  /** SIGKILL one node and wait until it is gone (its replica takes over after cluster-node-timeout). */
  kill(port: number): Promise<void>;
  /** Resolves once every node reports `cluster_state:ok` (after a failover, say), or rejects after `timeoutMs`. */
  waitUntilOk(timeoutMs?: number): Promise<void>;
  /** Stops every node and removes the directory. */
  stop(): Promise<void>;
}

/** How long a master may be silent before its replica is promoted: short, so a failover test stays short. */
const NODE_TIMEOUT_MS = 1000;

/** Starts the cluster and waits until it serves every slot. Needs `redis-server` and `redis-cli` (Redis ≥ 7) on the PATH. */
export async function startLocalRedisCluster(options: { masters?: number } = {}): Promise<LocalRedisCluster> {
  const masters = options.masters ?? 3;
  const dir = await mkdtemp(join(tmpdir(), 'redis-cluster-'));
  const children = new Map<number, ChildProcess>();
  const cli = async (port: number, ...args: string[]): Promise<string> => (await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args])).stdout;
  const nodes: ClusterNode[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all([...children.values()].map((child) => killChild(child)));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    // Every node's port and, since the default (port + 10000) may be taken or out of range, its cluster
    // bus's: all distinct, chosen before any node starts.
    const ports = await freePorts(masters * 4);
    for (let i = 0; i < masters * 2; i += 1) {
      const port = ports[2 * i] as number;
      const busPort = ports[2 * i + 1] as number;
      const child = spawn(
        'redis-server',
        [
          '--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-port', String(busPort),
          '--cluster-config-file', join(dir, `nodes-${port}.conf`), '--cluster-node-timeout', String(NODE_TIMEOUT_MS),
          '--dir', dir, '--save', '', '--appendonly', 'no', '--logfile', join(dir, `redis-${port}.log`),
          // A replica must have synced before its master may fail: no 5 s wait before the first transfer.
          '--repl-diskless-sync-delay', '0',
        ],
        { stdio: 'ignore' },
      );
      killedOnExit(child);
      children.set(port, child);
      nodes.push({ port, address: `127.0.0.1:${port}`, pid: () => children.get(port)?.pid });
    }
    for (const node of nodes) {
      await untilAnswers(() => cli(node.port, 'PING')).catch(async (err: unknown) => {
        // Why, from the node's own log (a port taken, say), rather than a bare timeout.
        const log = await readFile(join(dir, `redis-${node.port}.log`), 'utf8').catch(() => '');
        throw new Error(`${err instanceof Error ? err.message : String(err)} (port ${node.port}): ${log.trim().split('\n').slice(-3).join(' | ')}`);
      });
    }
    await run('redis-cli', ['--cluster', 'create', ...nodes.map((n) => n.address), '--cluster-replicas', '1', '--cluster-yes']);
    const cluster = clusterOf(nodes, cli, children, stop);
    await cluster.waitUntilOk(20_000);
    await untilReplicasSynced(nodes, cli);
    return cluster;
  } catch (err) {
    await stop();
    throw err;
  }
}

function clusterOf(nodes: ClusterNode[], cli: LocalRedisCluster['cli'], children: Map<number, ChildProcess>, stop: () => Promise<void>): LocalRedisCluster {
  const alive = () => nodes.filter((node) => children.has(node.port));
  const masters = async () => {
    const lines = (await firstAnswer(alive(), (node) => cli(node.port, 'CLUSTER', 'NODES'))).trim().split('\n');
    const rows = lines.map((line) => line.split(' '));
    const portOf = (row: string[]) => Number(row[1]?.split('@')[0]?.split(':')[1]);
    return rows
      .filter((row) => row[2]?.includes('master') && !row[2].includes('fail'))
      .map((row) => ({
        port: portOf(row),
        replicaPort: rows.filter((r) => r[3] === row[0] && !r[2]?.includes('fail')).map(portOf)[0],
        slots: row.slice(8),
      }));
  };
  const masterOfSlot = async (slot: number): Promise<number> => {
    for (const master of await masters()) {
      for (const range of master.slots) {
        const [from, to = from] = range.split('-').map(Number);
        if (from !== undefined && to !== undefined && slot >= from && slot <= to) return master.port;
      }
    }
    throw new Error(`no master serves slot ${slot}`);
  };
  const idOf = async (port: number) => (await cli(port, 'CLUSTER', 'MYID')).trim();
  return {
    nodes,
    seeds: nodes.map((n) => n.address).join(','),
    cli,
    masters,
    masterOfSlot,
    async moveSlot(slot, toPort) {
      const fromPort = await masterOfSlot(slot);
      if (fromPort === toPort) return;
      const [fromId, toId] = [await idOf(fromPort), await idOf(toPort)];
      await cli(toPort, 'CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', fromId);
      await cli(fromPort, 'CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', toId);
      for (;;) {
        const keys = (await cli(fromPort, 'CLUSTER', 'GETKEYSINSLOT', String(slot), '100')).split('\n').filter((k) => k !== '');
        if (keys.length === 0) break;
        await cli(fromPort, 'MIGRATE', '127.0.0.1', String(toPort), '', '0', '5000', 'KEYS', ...keys);
      }
      // The owner named on the destination first, then on the source, then on the other masters, as the
      // documentation of CLUSTER SETSLOT orders it: the source told first sends a client to the destination,
      // which, still importing, sends it back, and a client meets MOVED after MOVED until both know.
      const others = (await masters()).map((m) => m.port).filter((port) => port !== toPort && port !== fromPort);
      for (const port of [toPort, fromPort, ...others]) await cli(port, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', toId);
    },
    async kill(port) {
      const child = children.get(port);
      children.delete(port);
      if (child !== undefined) await killChild(child);
    },
    async waitUntilOk(timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const states = await Promise.all(alive().map((node) => cli(node.port, 'CLUSTER', 'INFO').catch(() => '')));
        if (states.every((info) => info.includes('cluster_state:ok'))) return;
        if (Date.now() > deadline) throw new Error('the local Redis cluster did not reach cluster_state:ok');
        await sleep(100);
      }
    },
    stop,
  };
}

async function killChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

async function untilAnswers(ask: () => Promise<string>): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    if ((await ask().catch(() => '')).includes('PONG')) return;
    if (Date.now() > deadline) throw new Error('a redis-server of the local cluster did not start');
    await sleep(50);
  }
}

/** Waits until every replica's link to its master is up: only a replica that synced can be promoted. */
async function untilReplicasSynced(nodes: ClusterNode[], cli: LocalRedisCluster['cli']): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const infos = await Promise.all(nodes.map((node) => cli(node.port, 'INFO', 'replication')));
    const replicas = infos.filter((info) => info.includes('role:slave'));
    if (replicas.length > 0 && replicas.every((info) => info.includes('master_link_status:up'))) return;
    if (Date.now() > deadline) throw new Error('the replicas of the local Redis cluster did not sync');
    await sleep(100);
  }
}

async function firstAnswer<T>(nodes: ClusterNode[], ask: (node: ClusterNode) => Promise<T>): Promise<T> {
  let last: unknown;
  for (const node of nodes) {
    try {
      return await ask(node);
    } catch (err) {
      last = err;
    }
  }
  throw last;
}
