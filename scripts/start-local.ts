// `pnpm start`: the local stack (identity, risk, gateway) on Node 24, from the TypeScript sources.
// Every process reads its own configuration; with APP_ENV=local (the default) nothing needs setting.
// In `local`, when Postgres or Redis cannot be reached, the stack starts anyway on embedded stand-ins
// (packages/embedded: PGlite, an in-process Redis), the three apps then in one process; EMBEDDED_FALLBACK
// = auto (default) | off (fail as before) | always (embedded even when both are up).
// Ctrl-C (or SIGTERM) drains and stops all three; the exit code is 0 when all stopped cleanly.
import { connect } from 'node:net';
import { startStack } from '@platform/stack';

const env: NodeJS.ProcessEnv = { ...process.env, APP_ENV: process.env.APP_ENV ?? 'local' };
const host = env.HOST ?? '127.0.0.1';
const ports = {
  identity: Number(env.IDENTITY_PORT ?? 8081),
  risk: Number(env.RISK_PORT ?? 8082),
  gateway: Number(env.GATEWAY_PORT ?? 8080),
  gatewayManagement: Number(env.GATEWAY_MANAGEMENT_PORT ?? 9080),
};

function say(message: string): void {
  console.log(JSON.stringify({ level: 'info', time: new Date().toISOString(), service: 'start-local', msg: message }));
}

/** True when something accepts a TCP connection at the URL's host and port within `timeoutMs`. */
function reachable(url: string, defaultPort: number, timeoutMs = 1000): Promise<boolean> {
  if (!URL.canParse(url)) return Promise.resolve(true); // the service's own config check reports it
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(port || defaultPort), timeout: timeoutMs });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}

// The local defaults of the services' config.ts, probed when the variables are unset.
const databaseUrls = [
  env.IDENTITY_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/identity',
  env.RISK_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/risk',
];
const redisUrl = env.REDIS_URL ?? 'redis://127.0.0.1:6379/0';
const fallback = env.EMBEDDED_FALLBACK ?? 'auto';
if (!['auto', 'off', 'always'].includes(fallback)) {
  console.error(`EMBEDDED_FALLBACK must be auto, off or always, got "${fallback}"`);
  process.exit(1);
}
const mayEmbed = env.APP_ENV === 'local' && fallback !== 'off';
const [postgresUp, redisUp] = mayEmbed
  ? await Promise.all([Promise.all(databaseUrls.map((url) => reachable(url, 5432))).then((up) => up.every(Boolean)), reachable(redisUrl, 6379)])
  : [true, true];
const embed = { postgres: mayEmbed && (fallback === 'always' || !postgresUp), redis: mayEmbed && (fallback === 'always' || !redisUp) };
const embedded = embed.postgres || embed.redis;

const where = (url: string) => (URL.canParse(url) ? new URL(url).host : url);
if (embedded) {
  say(
    `EMBEDDED FALLBACK (APP_ENV=local): ` +
      `postgres ${embed.postgres ? `${postgresUp ? 'replaced' : `unreachable at ${databaseUrls.map(where).join(', ')}`}: embedded PGlite` : 'as configured'}; ` +
      `redis ${embed.redis ? `${redisUp ? 'replaced' : `unreachable at ${where(redisUrl)}`}: in-process stand-in` : 'as configured'}; ` +
      `gateway http://${host}:${ports.gateway}, identity :${ports.identity} and risk :${ports.risk} run in one process`,
  );
} else {
  say(
    `starting the local stack (APP_ENV=${env.APP_ENV}): gateway http://${host}:${ports.gateway} is the public entry; ` +
      `identity :${ports.identity} and risk :${ports.risk} behind it; ` +
      `postgres ${env.IDENTITY_DATABASE_URL ? 'from IDENTITY_DATABASE_URL/RISK_DATABASE_URL' : 'at 127.0.0.1:5432'}, ` +
      `redis ${env.REDIS_URL ? 'from REDIS_URL' : 'at 127.0.0.1:6379'}`,
  );
}

// Each piece gets its own process group, so one Ctrl-C reaches this script only and it stops the
// pieces exactly once, in a known way.
const stack = await startStack({ env, host, ports, output: 'inherit', detached: true, readiness: 'none', embedded: embedded ? embed : undefined });

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  const codes = await stack.stop();
  const failed = [...codes.values()].some((c) => c !== 0);
  say(failed ? 'stopped, with failures' : 'stopped');
  process.exit(failed ? 1 : 0);
}
for (const piece of stack.processes) {
  void piece.exited.then((code) => {
    if (!stopping) {
      say(`${piece.name} exited (${code === null ? 'by a signal' : `code ${code}`}); stopping the rest`);
      void stop();
    }
  });
}
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());

// Tell the person at the terminal when the whole stack can take requests.
const late = await stack.waitFor('/health/ready', 60_000);
if (!stopping) say(late.length === 0 ? `local stack ready: http://${host}:${ports.gateway}` : `still not ready after 60 s: ${late.join(', ')}`);
