// `pnpm soak`: mixed traffic through the gateway at a steady rate for 10 minutes, then a summary.
// Passes when no request got a 5xx or failed at the network level and no process's heap kept growing.
// By default it starts its own local stack (@platform/stack) on free ports, fresh databases and a Redis prefix;
// SOAK_GATEWAY_URL points it at a running one instead (with SOAK_KEY_ID/SOAK_KEY_SECRET, SOAK_ADMIN_*).
import { randomUUID } from 'node:crypto';
import { createSigner, signRequest } from '@platform/client';
import { LOCAL_POSTGRES_URL, LOCAL_REDIS_URL, startStack as launch } from '@platform/stack';

const env = process.env;
const DURATION_S = Number(env.SOAK_DURATION_S ?? 600);
const RATE = Number(env.SOAK_RATE ?? 40);
const WARMUP_S = Math.min(60, DURATION_S / 5);
const MAX_IN_FLIGHT = 200;
const USERS = 20;
// Signed by the SDK, as any client signs.
const signer = createSigner(env.SOAK_KEY_ID ?? 'local-dev', { alg: 'hmac-sha256', secret: env.SOAK_KEY_SECRET ?? 'local-dev-secret' });
const admin = { username: env.SOAK_ADMIN_USERNAME ?? 'admin@example.com', password: env.SOAK_ADMIN_PASSWORD ?? 'local-admin-password' };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The local stack, started by this script, with its own ports, databases and Redis keys. */
async function startStack(): Promise<{ gateway: string; processes: Record<string, string>; stop: () => Promise<void> }> {
  const run = `soak_${Date.now().toString(36)}_${randomUUID().slice(0, 8)}`;
  const stack = await launch({
    env: { ...env, APP_ENV: 'local', LOG_LEVEL: 'error', LOGIN_FAILURES_PER_MIN: '1000000' },
    databases: { serverUrl: env.TEST_POSTGRES_URL ?? LOCAL_POSTGRES_URL, run },
    redis: { url: env.TEST_REDIS_URL ?? LOCAL_REDIS_URL, prefix: `${run}:` },
    output: 'inherit',
    readyTimeoutMs: 90_000,
  });
  return {
    gateway: stack.urls.gateway,
    // Where each process answers /metrics: the gateway on its management port.
    processes: { ...stack.urls, gateway: stack.gatewayManagementUrl },
    stop: async () => {
      const codes = await stack.stop();
      console.log(`stack stopped with exit codes ${JSON.stringify(Object.fromEntries(codes))}`);
    },
  };
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** One signed request through the gateway; status 0 means the request failed at the network level. */
async function call(base: string, method: string, target: string, body?: unknown, bearer?: string): Promise<Answer> {
  const bytes = body === undefined ? undefined : new TextEncoder().encode(typeof body === 'string' ? body : JSON.stringify(body));
  const url = new URL(target, base);
  try {
    const signed = await signRequest({ method, url, idempotencyKey: randomUUID(), body: bytes, authorization: bearer === undefined ? undefined : `Bearer ${bearer}` }, signer);
    const headers: Record<string, string> = { ...signed };
    if (bytes !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(url, { method, headers, body: bytes, signal: AbortSignal.timeout(30_000) });
    const text = await res.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
    } catch {
      // kept empty: the status is what counts
    }
    return { status: res.status, body: parsed };
  } catch {
    return { status: 0, body: {} };
  }
}

interface VirtualUser {
  id: string;
  username: string;
  password: string;
  accessToken?: string;
  refreshToken?: string;
  busy: boolean;
}

/** Latencies and statuses per operation. */
const stats = new Map<string, { latencies: number[]; statuses: Map<number, number> }>();
function record(op: string, status: number, ms: number): void {
  const entry = stats.get(op) ?? { latencies: [] as number[], statuses: new Map<number, number>() };
  entry.latencies.push(ms);
  entry.statuses.set(status, (entry.statuses.get(status) ?? 0) + 1);
  stats.set(op, entry);
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

/** Heap used and RSS of a process, from its /metrics. */
async function memoryOf(url: string): Promise<{ heap: number; rss: number } | undefined> {
  const text = await fetch(`${url}/metrics`).then((r) => r.text(), () => '');
  const read = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  const heap = read('nodejs_heap_size_used_bytes');
  return Number.isNaN(heap) ? undefined : { heap, rss: read('process_resident_memory_bytes') };
}

const mb = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MB`;

async function main(): Promise<number> {
  const own = env.SOAK_GATEWAY_URL === undefined ? await startStack() : undefined;
  const base = env.SOAK_GATEWAY_URL ?? own?.gateway ?? '';
  const processes = own?.processes ?? { gateway: base };
  try {
    const adminLogin = await call(base, 'POST', '/v1/auth/login', admin);
    if (adminLogin.status !== 200) throw new Error(`admin login failed with ${adminLogin.status}`);
    const adminToken = String(adminLogin.body.accessToken);
    const users: VirtualUser[] = [];
    for (let i = 0; i < USERS; i++) {
      const username = `soak-${randomUUID()}@example.com`;
      const password = `soak-password-${i}-${randomUUID()}`;
      const created = await call(base, 'POST', '/v1/users/create', { username, password, firstName: 'Soak', lastName: `User${i}`, locale: 'tr_TR', timezone: 'Europe/Istanbul', roles: ['STANDARD_USER'], status: 'ACTIVE' }, adminToken);
      if (created.status !== 201) throw new Error(`creating a soak user failed with ${created.status}`);
      const id = String(created.body.userId);
      await call(base, 'POST', '/v1/accounts/create', { userId: id, type: 'INDIVIDUAL', subscriptionPlan: 'TRIAL' }, adminToken);
      users.push({ id, username, password, busy: false });
    }

    const pickOne = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T;
    const stations = ['/v1/weather-stations/get-cities', '/v1/weather-stations/by/id/17130', '/v1/weather-stations/get-districts-of/%C4%B0stanbul', '/v1/weather-stations/nearest?latitude=39.92&longitude=32.85&limit=5'];
    /** One operation of the mix for a free user; returns its name and its answer, or undefined when no user is free. */
    const operations: Array<[number, (u: VirtualUser) => Promise<[string, Answer]>]> = [
      [40, async (u) => ['station lookup', await call(base, 'GET', pickOne(stations), undefined, u.accessToken)]],
      [10, async (u) => ['stations by district', await call(base, 'POST', '/v1/weather-stations/by/city-district', { city: 'ankara', district: 'çankaya', limit: 5 }, u.accessToken)]],
      [10, async (u) => ['read own account', await call(base, 'GET', `/v1/accounts/${u.id}`, undefined, u.accessToken)]],
      [5, async (u) => ['update own name', await call(base, 'PATCH', '/v1/users/update', { userId: u.id, firstName: `Soak${Date.now() % 1000}` }, u.accessToken)]],
      [10, async (u) => {
        const res = await call(base, 'POST', '/v1/auth/refresh', { refreshToken: u.refreshToken });
        if (res.status === 200) [u.accessToken, u.refreshToken] = [String(res.body.accessToken), String(res.body.refreshToken)];
        return ['refresh', res];
      }],
      [3, async (u) => {
        const res = await call(base, 'POST', '/v1/auth/logout', { jwtToken: u.accessToken });
        u.accessToken = undefined;
        return ['logout', res];
      }],
      [3, async () => ['failed login (unknown user)', await call(base, 'POST', '/v1/auth/login', { username: `nobody-${randomUUID()}@example.com`, password: 'wrong-password' })]],
      [5, async (u) => ['invalid body', await call(base, 'POST', '/v1/weather-stations/by/city-district', '{"city": 42, "limit": "many"}', u.accessToken)]],
    ];
    const totalWeight = operations.reduce((sum, [w]) => sum + w, 0);
    const pick = () => {
      let roll = Math.random() * totalWeight;
      for (const [weight, op] of operations) if ((roll -= weight) < 0) return op;
      return pickOne(operations)[1];
    };
    // Every other status counts as unexpected: the mix holds only requests whose answer is known.
    const expected: Record<string, number[]> = { 'failed login (unknown user)': [401], 'invalid body': [400] };

    const run = async (u: VirtualUser): Promise<void> => {
      u.busy = true;
      const started = performance.now();
      try {
        if (u.accessToken === undefined) {
          const res = await call(base, 'POST', '/v1/auth/login', { username: u.username, password: u.password });
          if (res.status === 200) [u.accessToken, u.refreshToken] = [String(res.body.accessToken), String(res.body.refreshToken)];
          record('login', res.status, performance.now() - started);
          return;
        }
        const [name, res] = await pick()(u);
        record(name, res.status, performance.now() - started);
      } finally {
        u.busy = false;
      }
    };

    console.log(`soak: ${RATE} requests/s for ${DURATION_S} s through ${base} (${USERS} users)`);
    const memory = new Map<string, Array<{ at: number; heap: number; rss: number }>>();
    const began = Date.now();
    let sent = 0;
    let skipped = 0;
    let inFlight = 0;
    const sampler = setInterval(() => {
      for (const [name, url] of Object.entries(processes)) {
        void memoryOf(url).then((m) => m && memory.set(name, [...(memory.get(name) ?? []), { at: (Date.now() - began) / 1000, ...m }]));
      }
    }, 5000);
    let lastReport = began;
    while (Date.now() - began < DURATION_S * 1000) {
      // Open loop: the schedule follows the clock, not the answers, so a slow system meets the same load.
      const due = Math.floor(((Date.now() - began) / 1000) * RATE);
      while (sent < due) {
        sent++;
        const free = users.filter((u) => !u.busy);
        if (free.length === 0 || inFlight >= MAX_IN_FLIGHT) {
          skipped++;
          continue;
        }
        inFlight++;
        void run(pickOne(free)).finally(() => inFlight--);
      }
      if (Date.now() - lastReport >= 60_000) {
        lastReport = Date.now();
        const errors = [...stats.values()].reduce((n, s) => n + [...s.statuses].filter(([st]) => st === 0 || st >= 500).reduce((m, [, c]) => m + c, 0), 0);
        console.log(`  ${Math.round((lastReport - began) / 1000)} s: ${sent} scheduled, ${errors} 5xx/network errors so far`);
      }
      await sleep(5);
    }
    while (inFlight > 0) await sleep(50);
    clearInterval(sampler);

    console.log('\noperation                     count   p50 ms   p95 ms   p99 ms   max ms  statuses');
    let failures = 0;
    let unexpected = 0;
    for (const [op, { latencies, statuses }] of [...stats].sort()) {
      const sorted = [...latencies].sort((a, b) => a - b);
      for (const [status, count] of statuses) {
        if (status === 0 || status >= 500) failures += count;
        else if (!(expected[op] ?? [200]).includes(status)) unexpected += count;
      }
      const shown = [...statuses].sort().map(([s, c]) => `${s === 0 ? 'network' : s}×${c}`).join(' ');
      console.log(`${op.padEnd(28)} ${String(sorted.length).padStart(6)} ${[0.5, 0.95, 0.99, 1].map((q) => quantile(sorted, q).toFixed(1).padStart(8)).join(' ')}  ${shown}`);
    }
    let memoryGrew = false;
    console.log('\nmemory (heap used after GC, i.e. the lowest sample: first minute after warm-up → last minute; RSS at the end)');
    for (const [url, samples] of memory) {
      const early = samples.filter((s) => s.at >= WARMUP_S && s.at < WARMUP_S + 60).map((s) => s.heap);
      const late = samples.filter((s) => s.at >= DURATION_S - 60).map((s) => s.heap);
      // The floor of a window is what survived a collection: garbage awaiting the next GC moves the
      // mean and median by tens of MB, a leak moves the floor.
      const [first, last] = [Math.min(...early), Math.min(...late)];
      // Flat: within 25 % (plus 5 MB of slack); a leak grows steadily past that in 10 minutes.
      const grew = early.length > 0 && late.length > 0 && last > first * 1.25 + 5 * 1048576;
      memoryGrew ||= grew;
      const perMinute = Array.from({ length: Math.ceil(DURATION_S / 60) }, (_, m) => samples.filter((s) => s.at >= m * 60 && s.at < (m + 1) * 60).map((s) => s.heap));
      const trend = perMinute.filter((w) => w.length > 0).map((w) => (Math.min(...w) / 1048576).toFixed(0)).join(' ');
      console.log(`  ${url.padEnd(8)} ${mb(first)} → ${mb(last)}, RSS ${mb(samples.at(-1)?.rss ?? 0)}${grew ? '  GROWING' : ''}; per minute (MB): ${trend}`);
    }
    const total = [...stats.values()].reduce((n, s) => n + s.latencies.length, 0);
    const ok = failures === 0 && unexpected === 0 && !memoryGrew;
    console.log(`\n${ok ? 'PASS' : 'FAIL'}: ${total} requests in ${DURATION_S} s (${(total / DURATION_S).toFixed(1)}/s), ${failures} 5xx or network errors, ${unexpected} unexpected statuses, ${skipped} skipped (no free user), memory ${memoryGrew ? 'growing' : 'flat'}`);
    return ok ? 0 : 1;
  } finally {
    await own?.stop();
  }
}

process.exitCode = await main();
