import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { killedOnExit } from './exit-kill.ts';
import { freePort } from './ports.ts';

/** A redis-server of one test file or benchmark, on its own port, that its owner may kill or freeze. */
export interface PrivateRedis {
  port: number;
  url: string;
  /** The server process (its CPU time is the owner's alone); changes on `restart`. */
  pid(): number | undefined;
  /** SIGKILL, and wait until the process is gone. */
  kill(): Promise<void>;
  /** SIGSTOP: the port stays open, nothing answers. */
  freeze(): void;
  /** SIGCONT after `freeze`. */
  thaw(): void;
  /**
   * Starts a fresh server on the same port after `kill` (empty: nothing is persisted); or, with `keepData`,
   * saves the data, stops the running server and starts another one from that data: another server (another
   * run id) holding the same keys, as after a restart from a persisted file.
   */
  restart(options?: { keepData?: boolean }): Promise<void>;
  stop(): Promise<void>;
}

/** Sends one inline command; true when the answer starts with `expected`. */
function answers(port: number, command: string, expected: string, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (data) => done(data.toString().startsWith(expected)));
  });
}

const answersPing = (port: number): Promise<boolean> => answers(port, 'PING', '+PONG');

/** Starts `redis-server` without persistence on a free port and waits until it answers PING. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  // Where `restart({ keepData })` saves the data; nothing is saved otherwise.
  const dir = mkdtempSync(join(tmpdir(), 'private-redis-'));
  let child: ChildProcess | undefined;
  const start = async () => {
    const files = ['--dir', dir, '--dbfilename', 'dump.rdb'];
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...files], { stdio: 'ignore' });
    killedOnExit(child);
    const deadline = Date.now() + 5000;
    while (!(await answersPing(port))) {
      if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not start`);
      await sleep(50);
    }
  };
  const killNow = async (signal: NodeJS.Signals) => {
    const running = child;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGCONT');
    running.kill(signal);
    await exited;
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}/0`,
    pid: () => child?.pid,
    kill: () => killNow('SIGKILL'),
    freeze: () => void child?.kill('SIGSTOP'),
    thaw: () => void child?.kill('SIGCONT'),
    async restart(options = {}) {
      if (options.keepData === true) {
        if (!(await answers(port, 'SAVE', '+OK', 5000))) throw new Error(`redis-server on port ${port} did not save its data`);
        await killNow('SIGKILL');
      } else {
        rmSync(join(dir, 'dump.rdb'), { force: true });
      }
      await start();
    },
    stop: async () => {
      await killNow('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
