import { type Deployable, type StartedProcess, freePort, startDeployable } from '@platform/stack';

export type { Deployable };

/** One deployable running as its own process, exactly as `pnpm start` runs it. */
export interface ServiceProcess extends StartedProcess {
  name: Deployable;
  port: number;
}

/** The environment a child starts from: only what Node and the tools need, never the caller's config. */
export function baseEnv(): Record<string, string> {
  const keep = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TZ'];
  return Object.fromEntries(keep.flatMap((k) => (process.env[k] === undefined ? [] : [[k, process.env[k] as string]])));
}

/**
 * Starts a deployable on a free port (or `port`) with `env` and waits until `GET /health/live` answers
 * (live, not ready: a fault test may start a process whose dependency is down).
 */
export async function startProcess(name: Deployable, env: Record<string, string>, port?: number): Promise<ServiceProcess> {
  // Never the default management port: several gateways may run at once.
  const management = name === 'gateway' ? { GATEWAY_MANAGEMENT_PORT: String(await freePort()) } : {};
  const started = await startDeployable(name, {
    env: { ...baseEnv(), APP_ENV: 'local', LOG_LEVEL: 'warn', ...management, ...env },
    port,
    output: 'capture',
    readiness: 'live',
    readyTimeoutMs: 30_000,
  });
  return Object.assign(started, { name, port: Number(new URL(started.url).port) });
}
