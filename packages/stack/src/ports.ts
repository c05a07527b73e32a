import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import { type Server, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Ports for processes about to be started (a stack's services, a Redis, a limit of the bench), chosen where
// nothing else on the machine takes one between the choice and the child's bind:
// - below the system's ephemeral range (ip_local_port_range), which the system never hands out on its own:
//   a `listen(0)` and an outgoing connection of any process get theirs above it. (Asked for with listen(0),
//   the system offered a port it gave a moment before again, about once in a thousand calls within eight:
//   a CI run gave a local stack's gateway and risk one port.)
// - claimed across processes: the test run's parallel workers and a bench beside them each create the
//   port's file in one directory of the system's temporary directory, exclusively (O_EXCL), before they use
//   it. A claim is kept for CLAIM_MS; after that the port may be chosen again.
// - free when chosen: a server listens on it for a moment (a service of the machine may have it).

/** The lowest port handed out: above the well-known and most registered services' ports. */
const LOWEST = 10_000;
/**
 * How long a claim keeps a port from being chosen again, by any process. A claim matters only while nothing
 * listens on the port (a listening port is never chosen): between its choice and its process's bind, and
 * while a test has stopped a service to start it again on its port; minutes are ample. Longer, a run's
 * claims (about 2,000 ports) and the next runs' would use up the range.
 */
const CLAIM_MS = 2 * 60 * 1000;

/**
 * Where the claims are: one empty file per port, named by it. One directory per user: another user's would
 * refuse this one's files (its processes are not coordinated with, but keep out of the ephemeral range too).
 */
const CLAIMS_DIR = join(tmpdir(), `platform-port-claims-${process.getuid?.() ?? 'user'}`);

/** The first port of the system's ephemeral range (Linux's ip_local_port_range; IANA's 49152 elsewhere). */
function ephemeralStart(): number {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(first) && first > LOWEST + 1000) return first;
  } catch {
    // Not Linux: the dynamic range of RFC 6335.
  }
  return 49_152;
}

/** The ports this module hands out: [LOWEST, ephemeral start). */
const RANGE = { low: LOWEST, high: ephemeralStart() };
const SIZE = RANGE.high - RANGE.low;
/**
 * Where this process looks next. Every process starts at the bottom and goes up, skipping what others
 * claimed, so two processes asking at once meet, and their claims decide (tested so).
 */
let cursor = 0;

/** Claims `port` for this process: true when no other process holds a claim younger than CLAIM_MS. */
function claim(port: number): boolean {
  const file = join(CLAIMS_DIR, String(port));
  try {
    closeSync(openSync(file, 'wx'));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  // An old claim: removed, then claimed like a new one (of two processes doing so at once, one creates it).
  try {
    if (Date.now() - statSync(file).mtimeMs < CLAIM_MS) return false;
    unlinkSync(file);
    closeSync(openSync(file, 'wx'));
    return true;
  } catch {
    return false;
  }
}

/** Whether a server can listen on `port` of 127.0.0.1 right now. */
async function listenable(port: number): Promise<boolean> {
  const server: Server = createServer();
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => resolve(true));
  });
  if (listening) await new Promise((resolve) => server.close(resolve));
  return listening;
}

/** A TCP port free on 127.0.0.1 right now, for a process about to be started on it (see `freePorts`). */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0] as number;
}

/**
 * `count` distinct TCP ports free on 127.0.0.1 right now, for processes about to be started on them: below
 * the system's ephemeral range, claimed for this process (no process of this module hands one out again
 * within CLAIM_MS), and listenable when chosen.
 */
export async function freePorts(count: number): Promise<number[]> {
  mkdirSync(CLAIMS_DIR, { recursive: true });
  const chosen: number[] = [];
  for (let tried = 0; chosen.length < count; tried += 1) {
    if (tried >= SIZE) throw new Error(`no free port left in ${RANGE.low}–${RANGE.high - 1}: every one listened on or claimed in the last ${CLAIM_MS / 60_000} minutes (${CLAIMS_DIR})`);
    const port = RANGE.low + cursor;
    cursor = (cursor + 1) % SIZE;
    if (claim(port) && (await listenable(port))) chosen.push(port);
  }
  return chosen;
}
