import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const script = fileURLToPath(new URL('./support/leave-redis-running.ts', import.meta.url));

/** Whether something accepts connections on `port` at 127.0.0.1. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('servers a process started die with it (exit-kill.ts)', () => {
  it('a private Redis left running by a process that exits is killed at its exit: no redis-server outlives its test run', async () => {
    const { stdout } = await run(process.execPath, ['--disable-warning=ExperimentalWarning', script], { timeout: 20_000 });
    const port = Number(stdout.trim());
    assert.ok(Number.isInteger(port) && port > 0, `no port printed: ${stdout}`);
    // SIGKILL is sent at the exit; the kernel closes the port a moment later.
    const deadline = Date.now() + 2000;
    while (await listening(port)) {
      assert.ok(Date.now() < deadline, `the redis-server on port ${port} outlived the process that started it`);
      await sleep(50);
    }
  });
});
