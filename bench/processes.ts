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
