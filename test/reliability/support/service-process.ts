import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { eventually, freePort } from './ports.ts';

const root = fileURLToPath(new URL('../../..', import.meta.url));

const ENTRIES = {
  gateway: { entry: 'gateway/src/index.ts', portKey: 'GATEWAY_PORT' },
  identity: { entry: 'services/identity/src/index.ts', portKey: 'IDENTITY_PORT' },
  risk: { entry: 'services/risk/src/index.ts', portKey: 'RISK_PORT' },
} as const;

export type Deployable = keyof typeof ENTRIES;

/** One deployable running as its own process, exactly as `pnpm start` runs it. */
export interface ServiceProcess {
  name: Deployable;
  port: number;
  url: string;
  child: ChildProcess;
  /** Everything the process wrote so far (stdout and stderr). */
  output(): string;
  /** Resolves with the exit code (null after a signal) once the process has ended. */
  exited: Promise<number | null>;
  /** Sends SIGKILL if still running and waits for the end. */
  kill(): Promise<void>;
}

/** The environment a child starts from: only what Node and the tools need, never the caller's config. */
function baseEnv(): Record<string, string> {
  const keep = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TZ'];
  return Object.fromEntries(keep.flatMap((k) => (process.env[k] === undefined ? [] : [[k, process.env[k] as string]])));
}

/**
 * Starts a deployable on a free port (or `port`) with `env` and waits until `GET /health/live` answers
 * (live, not ready: a fault test may start a process whose dependency is down).
 */
export async function startProcess(name: Deployable, env: Record<string, string>, port?: number): Promise<ServiceProcess> {
  const { entry, portKey } = ENTRIES[name];
  const bound = port ?? (await freePort());
  const child = spawn(process.execPath, ['--conditions=development', '--disable-warning=ExperimentalWarning', entry], {
    cwd: root,
    env: {
      ...baseEnv(),
      APP_ENV: 'local',
      LOG_LEVEL: 'warn',
      // Never the default management port: several gateways may run at once.
      ...(name === 'gateway' ? { GATEWAY_MANAGEMENT_PORT: String(await freePort()) } : {}),
      ...env,
      [portKey]: String(bound),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${bound}`;
  const live = await eventually(async () => child.exitCode === null && (await fetch(`${url}/health/live`)).status === 200, 30_000, 100);
  if (!live) {
    child.kill('SIGKILL');
    throw new Error(`${name} did not come up on ${url}:\n${output}`);
  }
  return {
    name,
    port: bound,
    url,
    child,
    output: () => output,
    exited,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
