// `pnpm start`: the local stack (identity, risk, gateway) on Node 24, from the TypeScript sources.
// Every process reads its own configuration; with APP_ENV=local (the default) nothing needs setting.
// In `local`, when Postgres or Redis cannot be reached, the stack starts anyway on embedded stand-ins
// (packages/embedded: PGlite, an in-process Redis), the three apps then in one process; EMBEDDED_FALLBACK
// = auto (default) | off (fail as before) | always (embedded even when both are up).
// Ctrl-C (or SIGTERM) drains and stops all three; the exit code is 0 when all stopped cleanly.
import { type ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const env: NodeJS.ProcessEnv = { ...process.env, APP_ENV: process.env.APP_ENV ?? 'local' };
const host = env.HOST ?? '127.0.0.1';

const identityPort = env.IDENTITY_PORT ?? '8081';
const riskPort = env.RISK_PORT ?? '8082';
const gatewayPort = env.GATEWAY_PORT ?? '8080';
// The gateway and the risk service find identity and risk where this script starts them.
env.IDENTITY_URL ??= `http://${host}:${identityPort}`;
env.RISK_URL ??= `http://${host}:${riskPort}`;
env.IDENTITY_JWKS_URL ??= `http://${host}:${identityPort}/.well-known/jwks.json`;

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

const where = (url: string) => (URL.canParse(url) ? new URL(url).host : url);
if (embed.postgres || embed.redis) {
  say(
    `EMBEDDED FALLBACK (APP_ENV=local): ` +
      `postgres ${embed.postgres ? `${postgresUp ? 'replaced' : `unreachable at ${databaseUrls.map(where).join(', ')}`}: embedded PGlite` : 'as configured'}; ` +
      `redis ${embed.redis ? `${redisUp ? 'replaced' : `unreachable at ${where(redisUrl)}`}: in-process stand-in` : 'as configured'}; ` +
      `gateway http://${host}:${gatewayPort}, identity :${identityPort} and risk :${riskPort} run in one process`,
  );
} else {
  say(
    `starting the local stack (APP_ENV=${env.APP_ENV}): gateway http://${host}:${gatewayPort} is the public entry; ` +
      `identity :${identityPort} and risk :${riskPort} behind it; ` +
      `postgres ${env.IDENTITY_DATABASE_URL ? 'from IDENTITY_DATABASE_URL/RISK_DATABASE_URL' : 'at 127.0.0.1:5432'}, ` +
      `redis ${env.REDIS_URL ? 'from REDIS_URL' : 'at 127.0.0.1:6379'}`,
  );
}

const pieces = [
  { name: 'identity', port: identityPort },
  { name: 'risk', port: riskPort },
  { name: 'gateway', port: gatewayPort },
];
const launches =
  embed.postgres || embed.redis
    ? [{ name: 'embedded stack', args: ['packages/embedded/src/main.ts', ...(embed.postgres ? ['--postgres'] : []), ...(embed.redis ? ['--redis'] : [])] }]
    : [
        { name: 'identity', args: ['services/identity/src/index.ts'] },
        { name: 'risk', args: ['services/risk/src/index.ts'] },
        { name: 'gateway', args: ['gateway/src/index.ts'] },
      ];

let stopping = false;
const exits = new Map<string, number>();
const children: Array<{ name: string; child: ChildProcess }> = launches.map(({ name, args }) => {
  // Each piece gets its own process group, so one Ctrl-C reaches this script only and it stops the
  // pieces exactly once, in a known way.
  const child = spawn(process.execPath, ['--conditions=development', '--disable-warning=ExperimentalWarning', ...args], {
    cwd: root,
    env,
    stdio: 'inherit',
    detached: true,
  });
  child.on('exit', (code, signal) => {
    exits.set(name, code ?? (signal ? 1 : 0));
    if (!stopping) {
      say(`${name} exited (${signal ?? `code ${code}`}); stopping the rest`);
      stop();
    }
    if (exits.size === children.length) {
      const failed = [...exits.values()].some((c) => c !== 0);
      say(failed ? 'stopped, with failures' : 'stopped');
      process.exit(failed ? 1 : 0);
    }
  });
  return { name, child };
});

function stop(): void {
  if (stopping) return;
  stopping = true;
  for (const { child } of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  }
}

process.on('SIGINT', stop);
process.on('SIGTERM', stop);

// Tell the person at the terminal when the whole stack can take requests.
const deadline = Date.now() + 60_000;
const waiting = new Set(pieces.map((p) => p.name));
while (waiting.size > 0 && !stopping && Date.now() < deadline) {
  for (const piece of pieces) {
    if (!waiting.has(piece.name)) continue;
    const ready = await fetch(`http://${host}:${piece.port}/health/ready`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) waiting.delete(piece.name);
  }
  if (waiting.size > 0) await new Promise((r) => setTimeout(r, 250));
}
if (!stopping) {
  say(waiting.size === 0 ? `local stack ready: http://${host}:${gatewayPort}` : `still not ready after 60 s: ${[...waiting].join(', ')}`);
}
