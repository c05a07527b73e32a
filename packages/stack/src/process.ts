import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { getCompileCacheDir } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { killedOnExit } from './exit-kill.ts';

/** The repository root: entries are named relative to it. */
export const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** Where a started process writes: this terminal, a buffer the caller reads, or a log file per process. */
export type Output = 'inherit' | 'capture' | { dir: string };

export interface ProcessOptions {
  /** Names the process in messages and its log file. */
  name: string;
  /** The file node runs, relative to `cwd`: a `.ts` entry from the sources (workspace packages too), a `.js` one as built. */
  entry: string;
  args?: readonly string[];
  /** Defaults to the repository root. */
  cwd?: string;
  env: NodeJS.ProcessEnv;
  /** Where it will answer HTTP, for readiness and for the caller. */
  url: string;
  output: Output;
  /** Node arguments before the entry (`--cpu-prof`, say). */
  nodeArgs?: readonly string[];
  /** Its own process group, so a Ctrl-C at the terminal reaches only the launching script, which stops it. */
  detached?: boolean;
  /**
   * Export conditions of a `.ts` entry: `development` (the default) resolves the workspace packages to
   * their sources; none runs it as `pnpm start` runs scripts/start-local.ts.
   */
  conditions?: readonly string[];
}

/** A process this module started. */
export interface StartedProcess {
  name: string;
  pid: number;
  url: string;
  child: ChildProcess;
  /** Its log file, when the output goes to one. */
  log: string | undefined;
  /** What it wrote so far, when captured (stdout and stderr). */
  output(): string;
  /** Its exit code once it has ended (null after a signal). */
  exited: Promise<number | null>;
  /** Sends `signal` (SIGTERM) unless it has ended, waits for the end, and SIGKILLs it after `killAfterMs`. */
  stop(signal?: NodeJS.Signals, killAfterMs?: number): Promise<number | null>;
  /** SIGKILL, and waits for the end. */
  kill(): Promise<number | null>;
}

function stdio(name: string, output: Output): { stdio: ['ignore', 'inherit' | 'pipe' | number, 'inherit' | 'pipe' | number]; log?: string; fd?: number } {
  if (output === 'inherit') return { stdio: ['ignore', 'inherit', 'inherit'] };
  if (output === 'capture') return { stdio: ['ignore', 'pipe', 'pipe'] };
  // Straight into a file: whoever started it (a load generator) never spends time draining a pipe.
  const log = join(output.dir, `${name}.log`);
  const fd = openSync(log, 'a');
  return { stdio: ['ignore', fd, fd], log, fd };
}

/**
 * Starts `node <entry>` on the Node running this module (the workspace's Node 24), with the module compile
 * cache of this process when it has one (NODE_COMPILE_CACHE: the test runs turn it on, test/setup/compile-cache.ts).
 */
export function startProcess(options: ProcessOptions): StartedProcess {
  const io = stdio(options.name, options.output);
  const compileCache = getCompileCacheDir();
  const conditions = (options.conditions ?? ['development']).map((c) => `--conditions=${c}`);
  const sources = options.entry.endsWith('.ts') ? [...conditions, '--disable-warning=ExperimentalWarning'] : [];
  const child = spawn(process.execPath, [...sources, ...(options.nodeArgs ?? []), options.entry, ...(options.args ?? [])], {
    cwd: options.cwd ?? REPO_ROOT,
    env: compileCache === undefined ? options.env : { ...options.env, NODE_COMPILE_CACHE: compileCache },
    stdio: io.stdio,
    detached: options.detached === true,
  });
  killedOnExit(child);
  if (io.fd !== undefined) closeSync(io.fd);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  if (child.pid === undefined) throw new Error(`${options.name} did not start`);
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    name: options.name,
    pid: child.pid,
    url: options.url,
    child,
    log: io.log,
    output: () => output,
    exited,
    async stop(signal = 'SIGTERM', killAfterMs = 10_000) {
      if (running()) child.kill(signal);
      const killer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      try {
        return await exited;
      } finally {
        clearTimeout(killer);
      }
    },
    async kill() {
      if (running()) child.kill('SIGKILL');
      return exited;
    },
  };
}

/**
 * Polls `url` until it answers 200 (true), or until `deadline` (epoch ms) passes or `started` has
 * ended (false).
 */
export async function untilOk(url: string, deadline: number, started?: StartedProcess, intervalMs = 200): Promise<boolean> {
  while (Date.now() < deadline) {
    if (started !== undefined && (started.child.exitCode !== null || started.child.signalCode !== null)) return false;
    const status = await fetch(url).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return true;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return false;
}
