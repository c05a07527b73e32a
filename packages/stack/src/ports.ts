import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync } from 'node:fs';
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
//   port's file in the system's temporary directory, exclusively (O_EXCL), before they use it. A claim is
//   kept for CLAIM_MS to twice that; after that the port may be chosen again.
// - free when chosen: a server listens on it for a moment (a service of the machine may have it).
// - reachable by fetch: the Fetch standard's blocked ports (its "bad port" list) are never handed out, since
//   undici's fetch, with which the tests and the stack ask whether a process is ready, refuses them.

/** The lowest port handed out: above the well-known and most registered services' ports. */
const LOWEST = 10_000;
/**
 * The ports of the Fetch standard's bad-port list (fetch.spec.whatwg.org, "port blocking") at or above
 * LOWEST: `fetch` fails on them at once ("bad port"), so a process listening there never looks ready.
 */
const FETCH_BLOCKED: ReadonlySet<number> = new Set([10_080]);
/**
 * How long a claim keeps a port from being chosen again, by any process: at least CLAIM_MS and less than
 * twice that. A claim matters only while nothing listens on the port (a listening port is never chosen):
 * between its choice and its process's bind, and while a test has stopped a service to start it again on
 * its port; minutes are ample. Longer, a run's claims (about 2,000 ports) and the next runs' would use up the
 * range.
 */
const CLAIM_MS = 2 * 60 * 1000;

/**
 * Where the claims are: a directory per CLAIM_MS window of time, and in it one empty file per port claimed
 * then. One tree per user: another user's would refuse this one's files (its processes are not coordinated
 * with, but keep out of the ephemeral range too).
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

/** The window of time a claim made now belongs to. */
const windowNow = (): number => Math.floor(Date.now() / CLAIM_MS);

/**
 * Claims `port` for this process: true when no process claimed it in this window or the one before. A claim
 * is only ever created (O_EXCL), never taken over, so of two processes claiming one port at once exactly one
 * gets it; a window's directory is removed once it is two windows old (`freePorts`).
 */
function claim(port: number, window: number): boolean {
  if (existsSync(join(CLAIMS_DIR, String(window - 1), String(port)))) return false;
  try {
    closeSync(openSync(join(CLAIMS_DIR, String(window), String(port)), 'wx'));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

/** Makes this window's directory and removes those no claim is read from any more. */
function prepareClaims(window: number): void {
  mkdirSync(join(CLAIMS_DIR, String(window)), { recursive: true });
  for (const name of readdirSync(CLAIMS_DIR)) {
    if (Number(name) < window - 1) rmSync(join(CLAIMS_DIR, name), { recursive: true, force: true });
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
 * for CLAIM_MS at least), and listenable when chosen.
 */
export async function freePorts(count: number): Promise<number[]> {
  const window = windowNow();
  prepareClaims(window);
  const chosen: number[] = [];
  for (let tried = 0; chosen.length < count; tried += 1) {
    if (tried >= SIZE) throw new Error(`no free port left in ${RANGE.low}–${RANGE.high - 1}: every one listened on or claimed in the last ${CLAIM_MS / 60_000} to ${(2 * CLAIM_MS) / 60_000} minutes (${CLAIMS_DIR})`);
    const port = RANGE.low + cursor;
    cursor = (cursor + 1) % SIZE;
    if (!FETCH_BLOCKED.has(port) && claim(port, window) && (await listenable(port))) chosen.push(port);
  }
  return chosen;
}
