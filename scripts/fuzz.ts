// `pnpm fuzz`: the schema-driven fuzzer (scripts/fuzz/engine.ts) for FUZZ_DURATION_S (default 300) against
// its own stack of three real processes (@platform/stack: free ports, fresh databases, a Redis prefix).
// The seed is printed first and in the last line; FUZZ_SEED=<seed> replays a run request for request.
// The last line gives the requests, 5xx, schema violations and undocumented statuses; exit 1 on any.
import { randomInt, randomUUID } from 'node:crypto';
import { createSigner, signRequest } from '@platform/client';
import { LOCAL_POSTGRES_URL, LOCAL_REDIS_URL, startStack } from '@platform/stack';
import { describeRequest, runFuzz, summaryLine } from './fuzz/engine.ts';

const env = process.env;
const DURATION_MS = Number(env.FUZZ_DURATION_S ?? 300) * 1000;
const SEED = env.FUZZ_SEED === undefined ? randomInt(2 ** 31 - 1) : Number(env.FUZZ_SEED);
const CLIENT_KEY = { keyId: 'local-dev', secret: 'local-dev-secret' };
const signer = createSigner(CLIENT_KEY.keyId, { alg: 'hmac-sha256', secret: CLIENT_KEY.secret });

/** One signed JSON request through the gateway; its status and parsed body. */
async function call(base: string, method: string, target: string, body: unknown, bearer?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const bytes = new TextEncoder().encode(JSON.stringify(body));
  const url = new URL(target, base);
  const authorization = bearer === undefined ? undefined : `Bearer ${bearer}`;
  const headers = { ...(await signRequest({ method, url, idempotencyKey: randomUUID(), body: bytes, authorization }, signer)), 'content-type': 'application/json' };
  const res = await fetch(url, { method, headers, body: bytes });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function main(): Promise<number> {
  if (!Number.isInteger(SEED) || SEED < 0) throw new Error(`FUZZ_SEED must be a non-negative integer, got ${env.FUZZ_SEED}`);
  console.log(`fuzz: seed ${SEED} for ${DURATION_MS / 1000} s (replay with FUZZ_SEED=${SEED})`);
  const run = `fuzz_${Date.now().toString(36)}_${randomUUID().slice(0, 8)}`;
  const admin = { username: `admin-${run}@example.com`, password: 'fuzz-admin-password-1' };
  const stack = await startStack({
    env: {
      ...env,
      APP_ENV: 'local',
      LOG_LEVEL: 'error',
      BOOTSTRAP_ADMIN_USERNAME: admin.username,
      BOOTSTRAP_ADMIN_PASSWORD: admin.password,
      BCRYPT_COST: '4',
      // The throttles would soon refuse the fuzzer's own logins; their 429s are tested on their own.
      LOGIN_FAILURES_PER_MIN: '1000000',
      PASSWORD_RESET_REQUESTS_PER_HOUR: '100000',
    },
    databases: { serverUrl: env.TEST_POSTGRES_URL ?? LOCAL_POSTGRES_URL, run },
    redis: { url: env.TEST_REDIS_URL ?? LOCAL_REDIS_URL, prefix: `${run}:` },
    output: 'capture',
    readyTimeoutMs: 90_000,
  });
  try {
    const gateway = stack.urls.gateway;
    const login = async (credentials: { username: string; password: string }) => {
      const res = await call(gateway, 'POST', '/v1/auth/login', credentials);
      if (res.status !== 200) throw new Error(`login of ${credentials.username} answered ${res.status}`);
      return String(res.body.accessToken);
    };
    const user = { username: `user-${run}@example.com`, password: 'fuzz-user-password-1' };
    const created = await call(gateway, 'POST', '/v1/users/create', { ...user, firstName: 'Fuzz', lastName: 'User', locale: 'en_US', timezone: 'UTC', roles: ['STANDARD_USER'], status: 'ACTIVE' }, await login(admin));
    if (created.status !== 201) throw new Error(`creating the fuzzing user answered ${created.status}`);
    const document = (await (await fetch(`${gateway}/openapi.json`)).json()) as Record<string, unknown>;
    const started = Date.now();
    const report = await runFuzz({
      gatewayUrl: gateway,
      document,
      clientKey: CLIENT_KEY,
      tokens: async () => ({ admin: await login(admin), user: await login(user) }),
      seed: SEED,
      durationMs: DURATION_MS,
      onRound: (r) => {
        if (r.rounds % 10 === 0) console.log(`  ${Math.round((Date.now() - started) / 1000)} s: ${r.requests} requests, statuses ${JSON.stringify(r.byStatus)}`);
      },
    });
    for (const p of report.problems) console.log(`${p.kind} ${p.status}: ${describeRequest(p.request)}\n    ${p.detail}`);
    const down = (await Promise.all(Object.values(stack.urls).map(async (url) => ((await fetch(`${url}/health/live`).then((r) => r.status, () => 0)) === 200 ? [] : [url])))).flat();
    if (down.length > 0) console.log(`no longer live: ${down.join(', ')}`);
    console.log(summaryLine(report, Date.now() - started));
    return report.problems.length === 0 && down.length === 0 ? 0 : 1;
  } finally {
    await stack.stop();
  }
}

process.exitCode = await main().catch((err: unknown) => {
  console.error(err);
  return 1;
});
