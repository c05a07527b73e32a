import { type ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
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
  /** Starts a fresh server on the same port after `kill` (empty: nothing is persisted). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}

/** Starts `redis-server` without persistence on a free port and waits until it answers PING. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
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
    restart: start,
    stop: () => killNow('SIGKILL'),
  };
}
