import { type StartedProcess, databaseUrl, startProcess, untilOk } from '@platform/stack';
import { TEST_POSTGRES_URL } from '@platform/service-kit/testing';

export { freePort } from '@platform/stack';

/** The URL of database `name` on the test Postgres server. */
export function testDatabaseUrl(name: string): string {
  return databaseUrl(TEST_POSTGRES_URL, name);
}

/** Polls `url` until it answers 200 (true) or the deadline passes (false). */
export function waitUntilOk(url: string, deadline: number): Promise<boolean> {
  return untilOk(url, deadline);
}

/** `pnpm start` (scripts/start-local.ts) with `env`, run as pnpm runs it: no export conditions, output captured. */
export function startPnpmStart(env: NodeJS.ProcessEnv, gatewayPort: number): StartedProcess {
  return startProcess({ name: 'pnpm start', entry: 'scripts/start-local.ts', conditions: [], url: `http://127.0.0.1:${gatewayPort}`, output: 'capture', env });
}
