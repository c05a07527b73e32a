// What the benchmark reads of the processes it measures. Starting them is the launcher's (@platform/stack).
import { readFile } from 'node:fs/promises';

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

/**
 * What the kernel counts of a process's work that a CPU profile cannot name (V8's profiler sees a system
 * call only as the native frame that made it, and a wake-up not at all). At one pace every answer pays
 * its own wake-ups and system calls, where a closed loop shares them out over the answers of one turn.
 */
export interface KernelCounts {
  /** Times the main thread (the event loop) went to sleep and was woken: voluntary context switches. */
  wakeUps: number;
  /** Times the main thread was put off the CPU for another process: involuntary context switches. */
  preempted: number;
  /** Read-like system calls of all its threads (`syscr` of /proc/<pid>/io: read, recvmsg, readv…). */
  reads: number;
  /** Write-like system calls of all its threads (`syscw`: write, writev, sendmsg…). */
  writes: number;
}

/** Kernel counts made field by field (a difference per answer, a median of rounds). */
export function kernelCountsOf(value: (field: keyof KernelCounts) => number): KernelCounts {
  return { wakeUps: value('wakeUps'), preempted: value('preempted'), reads: value('reads'), writes: value('writes') };
}

/** A process's kernel counts so far, or undefined when /proc does not tell them (it exited, or is another user's). */
export async function kernelCounts(pid: number): Promise<KernelCounts | undefined> {
  try {
    const [status, io] = await Promise.all([readFile(`/proc/${pid}/status`, 'utf8'), readFile(`/proc/${pid}/io`, 'utf8')]);
    const count = (pattern: RegExp, text: string): number => {
      const found = pattern.exec(text)?.[1];
      if (found === undefined) throw new Error(`/proc/${pid} does not say ${String(pattern)}`);
      return Number(found);
    };
    return {
      wakeUps: count(/^voluntary_ctxt_switches:\s+(\d+)$/m, status),
      preempted: count(/^nonvoluntary_ctxt_switches:\s+(\d+)$/m, status),
      reads: count(/^syscr:\s+(\d+)$/m, io),
      writes: count(/^syscw:\s+(\d+)$/m, io),
    };
  } catch {
    return undefined;
  }
}

/** What a memory sampler offers the scenarios: the scenario (result ids) its samples count for until `end` is called. */
export interface MemoryPhases {
  during(ids: readonly string[]): { end(): void };
}

/**
 * Samples the resident memory of some processes every `everyMs` and keeps each one's peak: over the whole
 * run, and by scenario (`during`). Resident memory seldom goes back down, so a scenario's peak includes
 * what the ones before it left; `peakSetBy` names the scenario during which the run's peak was reached.
 * A sample during whose read the scenario changed is not kept: it may belong to either side (`read` is
 * only replaced by tests).
 */
export function memorySampler(
  pids: Readonly<Record<string, number | undefined>>,
  everyMs = 250,
  read: (pid: number) => Promise<number | undefined> = residentMb,
) {
  const peaks: Record<string, number> = {};
  const setBy: Record<string, readonly string[]> = {};
  const byScenario = new Map<string, Record<string, number>>();
  let current: readonly string[] = [];
  const sample = async () => {
    const ids = current;
    for (const [name, pid] of Object.entries(pids)) {
      if (pid === undefined) continue;
      const mb = await read(pid);
      if (mb === undefined || current !== ids) continue;
      if (mb > (peaks[name] ?? 0)) {
        peaks[name] = mb;
        setBy[name] = ids;
      }
      for (const id of ids) {
        let into = byScenario.get(id);
        if (into === undefined) byScenario.set(id, (into = {}));
        if (mb > (into[name] ?? 0)) into[name] = mb;
      }
    }
  };
  const timer = setInterval(() => void sample(), everyMs);
  timer.unref();
  return {
    /** The peak of each process so far, MB. */
    peaks: () => ({ ...peaks }),
    /** The scenario (its result ids) during which each process reached its peak; empty between scenarios. */
    peakSetBy: (): Readonly<Record<string, readonly string[]>> => ({ ...setBy }),
    /** The peak of each process while each scenario ran (its warm-up included), MB, by result id. */
    peaksByScenario: (): ReadonlyMap<string, Readonly<Record<string, number>>> => new Map(byScenario),
    /** Samples count for `ids` (one scenario, or the two sides of a pair) from now until `end`. */
    during: (ids: readonly string[]) => {
      current = ids;
      return {
        end: () => {
          if (current === ids) current = [];
        },
      };
    },
    stop: () => clearInterval(timer),
  };
}
