import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ROOT } from './config.ts';

export { freePort } from '@platform/service-kit/testing';

/** A process the benchmark started, its log file and how to stop it. */
export interface Started {
  name: string;
  pid: number;
  url: string;
  log: string;
  child: ChildProcess;
  /** SIGTERM, then waits for the exit (SIGKILL after 10 s). */
  stop(): Promise<void>;
}

/**
 * Starts `entry` (relative to the repository root) on Node 24: a `.ts` entry from the TypeScript sources
 * with the workspace packages' sources too (as scripts/start-local.ts does), a `.js` entry as built. Its output goes straight into `logDir/<name>.log` (the file is its
 * stdout), so the load generator never spends time draining a pipe of log lines.
 */
export function startNode(options: { name: string; entry: string; args?: string[]; env: NodeJS.ProcessEnv; port: number; logDir: string; nodeArgs?: string[] }): Started {
  const log = join(options.logDir, `${options.name}.log`);
  const out = openSync(log, 'a');
  const child = spawn(
    process.execPath,
    [
      ...(options.entry.endsWith('.ts') ? ['--conditions=development', '--disable-warning=ExperimentalWarning'] : []),
      ...(options.nodeArgs ?? []),
      options.entry,
      ...(options.args ?? []),
    ],
    { cwd: ROOT, env: options.env, stdio: ['ignore', out, out] },
  );
  closeSync(out);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (child.pid === undefined) throw new Error(`${options.name} did not start`);
  return {
    name: options.name,
    pid: child.pid,
    url: `http://127.0.0.1:${options.port}`,
    log,
    child,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

/** Waits until `url` answers 200; throws naming the log when it never does or the process died. */
export async function waitUntilOk(url: string, started: Started | undefined, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (started !== undefined && started.child.exitCode !== null) throw new Error(`${started.name} exited; see ${started.log}`);
    const status = await fetch(url).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} not ready after ${timeoutMs} ms${started === undefined ? '' : `; see ${started.log}`}`);
}

/** Resident set size of a process in MB (VmRSS of /proc/<pid>/status), or undefined when unreadable. */
export async function residentMb(pid: number): Promise<number | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

/** CPU time (user + system) a process has used so far, in ms, or undefined when unreadable. */
export async function cpuMs(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Clock ticks of 10 ms (USER_HZ is 100 on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/** Samples the resident memory of some processes every `everyMs` and keeps each one's peak. */
export function memorySampler(pids: Readonly<Record<string, number | undefined>>, everyMs = 250) {
  const peaks: Record<string, number> = {};
  const sample = async () => {
    for (const [name, pid] of Object.entries(pids)) {
      if (pid === undefined) continue;
      const mb = await residentMb(pid);
      if (mb !== undefined && mb > (peaks[name] ?? 0)) peaks[name] = mb;
    }
  };
  const timer = setInterval(() => void sample(), everyMs);
  timer.unref();
  return {
    /** The peak of each process so far, MB. */
    peaks: () => ({ ...peaks }),
    stop: () => clearInterval(timer),
  };
}
