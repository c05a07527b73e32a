import type { ChildProcess } from 'node:child_process';

// The children still running, killed when this process exits.
const running = new Set<ChildProcess>();

/** SIGKILLs every child still running (after SIGCONT: a frozen one must die too). Synchronous, as an `exit` listener must be. */
function killRunning(): void {
  for (const child of running) {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  }
}

/**
 * Has `child` die with this process: a test that fails before its `stop`, or a run ended by mocha's `--exit`,
 * leaves no server behind (redis-servers of private Redis and clusters were found running an hour later,
 * adopted by init, their ports and memory held). Only a normal exit runs it: a SIGKILL of this process does not.
 */
export function killedOnExit(child: ChildProcess): void {
  if (running.size === 0) process.on('exit', killRunning);
  running.add(child);
  child.once('exit', () => {
    running.delete(child);
    if (running.size === 0) process.off('exit', killRunning);
  });
}
