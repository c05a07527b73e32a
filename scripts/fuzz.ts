// `pnpm fuzz`: the schema-driven fuzzer (scripts/fuzz/engine.ts) for FUZZ_DURATION_S (default 300) against
// its own stack of three real processes (@platform/stack: free ports, fresh databases, a Redis prefix).
// The seed is printed first and in the last line; FUZZ_SEED=<seed> replays a run request for request.
// A request without a whole answer within FUZZ_REQUEST_TIMEOUT_MS (default 20 s) is a transport failure.
// Whatever happens (a process dies, a request stalls, the stack does not start), the problems found are
// printed with their requests and the last line gives the requests, 5xx, schema violations, undocumented
// statuses and transport failures; exit 1 on any, or when the run stopped early.
import { randomInt, randomUUID } from 'node:crypto';
import { createSigner, signRequest } from '@platform/client';
import { createDatabase } from '@platform/service-kit/database';
import { LOCAL_POSTGRES_URL, LOCAL_REDIS_URL, type Stack, startStack } from '@platform/stack';
import { DEFAULT_REQUEST_TIMEOUT_MS, type FuzzReport, describeProblem, emptyReport, problemCount, runFuzz, summaryLine } from './fuzz/engine.ts';

const env = process.env;
const DURATION_MS = Number(env.FUZZ_DURATION_S ?? 300) * 1000;
const SEED = env.FUZZ_SEED === undefined ? randomInt(2 ** 31 - 1) : Number(env.FUZZ_SEED);
const REQUEST_TIMEOUT_MS = Number(env.FUZZ_REQUEST_TIMEOUT_MS ?? DEFAULT_REQUEST_TIMEOUT_MS);
const CLIENT_KEY = { keyId: 'local-dev', secret: 'local-dev-secret' };
const signer = createSigner(CLIENT_KEY.keyId, { alg: 'hmac-sha256', secret: CLIENT_KEY.secret });
/** How much of the processes' own output is shown when one of them died or stalled. */
const OUTPUT_TAIL_LINES = 30;

/** One signed JSON request through the gateway; its status and parsed body. */
async function call(base: string, method: string, target: string, body: unknown, bearer?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const bytes = new TextEncoder().encode(JSON.stringify(body));
  const url = new URL(target, base);
  const authorization = bearer === undefined ? undefined : `Bearer ${bearer}`;
  const headers = { ...(await signRequest({ method, url, idempotencyKey: randomUUID(), body: bytes, authorization }, signer)), 'content-type': 'application/json' };
  // The fuzzer's own logins are bounded like its requests: a stalled gateway must end the run, not hang it.
  const res = await fetch(url, { method, headers, body: bytes, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The processes of `stack` that do not answer `/health/live` in time. */
async function notLive(stack: Stack): Promise<string[]> {
  const live = async (url: string) => (await fetch(`${url}/health/live`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }).then((r) => r.status, () => 0)) === 200;
  return (await Promise.all(Object.entries(stack.urls).map(async ([name, url]) => ((await live(url)) ? [] : [`${name} (${url})`])))).flat();
}

/** What a run found, how long the fuzzing took, and what else went wrong (a process down, the stack not starting). */
interface Outcome {
  report: FuzzReport;
  durationMs: number;
  troubles: string[];
}

/** Starts the stack, makes the fuzzing users and runs the fuzzer. Never throws: a failure is one of the troubles. */
async function fuzz(): Promise<Outcome> {
  let report = emptyReport(SEED);
  let durationMs = 0;
  const run = `fuzz_${Date.now().toString(36)}_${randomUUID().slice(0, 8)}`;
  const admin = { username: `admin-${run}@example.com`, password: 'fuzz-admin-password-1' };
  let stack: Stack | undefined;
  let identityDb: ReturnType<typeof createDatabase> | undefined;
  const troubles: string[] = [];
  try {
    stack = await startStack({
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
    const gateway = stack.urls.gateway;
    const login = async (credentials: { username: string; password: string }) => {
      const res = await call(gateway, 'POST', '/v1/auth/login', credentials);
      if (res.status !== 200) throw new Error(`login of ${credentials.username} answered ${res.status}`);
      return String(res.body.accessToken);
    };
    const user = { username: `user-${run}@example.com`, password: 'fuzz-user-password-1' };
    const created = await call(gateway, 'POST', '/v1/users/create', { ...user, firstName: 'Fuzz', lastName: 'User', locale: 'en_US', timezone: 'UTC', roles: ['STANDARD_USER'], status: 'ACTIVE' }, await login(admin));
    if (created.status !== 201) throw new Error(`creating the fuzzing user answered ${created.status}`);
    const document = (await (await fetch(`${gateway}/openapi.json`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })).json()) as Record<string, unknown>;
    const started = Date.now();
    // The fuzzer's own wrong second-factor codes count as failed logins of its callers (CONTRACT.md part 15),
    // which a login does not clear: cleared before every batch, so that they never block a caller.
    identityDb = createDatabase({ url: stack.database('identity'), applicationName: 'fuzz-callers' });
    const callers = [admin.username, user.username];
    report = await runFuzz({
      gatewayUrl: gateway,
      document,
      clientKey: CLIENT_KEY,
      tokens: async () => {
        await identityDb?.('users').whereIn('username', callers).update({ failed_login_count: 0 });
        return { admin: await login(admin), user: await login(user) };
      },
      seed: SEED,
      durationMs: DURATION_MS,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      onRound: (r) => {
        if (r.rounds % 10 === 0) console.log(`  ${Math.round((Date.now() - started) / 1000)} s: ${r.requests} requests, statuses ${JSON.stringify(r.byStatus)}`);
      },
    });
    durationMs = Date.now() - started;
    const down = await notLive(stack);
    if (down.length > 0) troubles.push(`no longer live: ${down.join(', ')}`);
    if (report.stopped !== undefined || down.length > 0 || report.counts['transport-failure'] > 0) {
      // A process that died or stalled says why in its own log: the last lines of the three, for the record.
      const tail = stack.output().trimEnd().split('\n').slice(-OUTPUT_TAIL_LINES).join('\n');
      if (tail !== '') troubles.push(`the processes' last output:\n${tail}`);
    }
  } catch (err) {
    troubles.push(`could not run: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    report.stopped ??= 'could not run';
  } finally {
    // Before the stack drops the run's databases, which it cannot while a connection is open.
    await identityDb?.destroy().catch((err: unknown) => troubles.push(`could not close the callers' database: ${String(err)}`));
    await stack?.stop().catch((err: unknown) => troubles.push(`could not stop the stack: ${String(err)}`));
  }
  return { report, durationMs, troubles };
}

async function main(): Promise<number> {
  if (!Number.isInteger(SEED) || SEED < 0) throw new Error(`FUZZ_SEED must be a non-negative integer, got ${env.FUZZ_SEED}`);
  if (!(REQUEST_TIMEOUT_MS > 0)) throw new Error(`FUZZ_REQUEST_TIMEOUT_MS must be a positive number, got ${env.FUZZ_REQUEST_TIMEOUT_MS}`);
  console.log(`fuzz: seed ${SEED} for ${DURATION_MS / 1000} s (replay with FUZZ_SEED=${SEED})`);
  const { report: found, durationMs, troubles } = await fuzz();
  for (const p of found.problems) console.log(describeProblem(p));
  if (problemCount(found) > found.problems.length) console.log(`(${problemCount(found) - found.problems.length} more problems counted, not shown)`);
  for (const trouble of troubles) console.log(trouble);
  if (found.stopped !== undefined) console.log(`fuzz: stopped early: ${found.stopped}`);
  console.log(summaryLine(found, durationMs));
  return problemCount(found) === 0 && troubles.length === 0 && found.stopped === undefined ? 0 : 1;
}

process.exitCode = await main().catch((err: unknown) => {
  console.error(err);
  return 1;
});
