import { join } from 'node:path';
import { type Knex, createDatabase, ensureDatabaseExists, migrateToLatest } from '@platform/service-kit/database';
import { type UserFilter, encodeCursor, findUsers, migrations } from '@platform/identity/user-search';
import { type RunContext, type ScenarioResult, needStack, record } from '../harness/context.ts';
import type { LoadResult } from '../harness/load.ts';
import { quantile } from '../harness/load.ts';

/** The migration that adds the search indexes: the users are loaded before it, so its build time on them is measured too. */
const INDEX_MIGRATION = '0010_user_search_indexes';
/** Requests per measured query (after a few unmeasured ones), one at a time. */
const SAMPLES = 15;
const WARMUP = 3;

/** One page request an operator makes, and the filter the service turns it into. */
interface SearchCase {
  id: string;
  label: string;
  query: string;
  filter: UserFilter;
}

/**
 * `count` users in one INSERT … SELECT generate_series: unique usernames (`user<n>@bench.example.com`),
 * first and last names from 16 common Turkish ones each, one in 200 BLOCKED and one in 50 INACTIVE, one in
 * 10 000 an ADMIN and one in 100 a POWER_USER, created one every 90 seconds up to now (about 3 years for a
 * million), and an account for every third user.
 */
async function loadUsers(db: Knex, count: number): Promise<void> {
  await db.raw(
    `INSERT INTO users (username, first_name, last_name, locale, timezone, roles, status, created_at)
     SELECT 'user' || g || '@bench.example.com',
            (ARRAY['Ayşe','Mehmet','Fatma','Ali','Zeynep','Mustafa','Emine','Ahmet','Hatice','Hüseyin','Elif','Can','Deniz','Ece','Burak','Selin'])[1 + g % 16],
            (ARRAY['Yılmaz','Kaya','Demir','Şahin','Çelik','Yıldız','Yıldırım','Öztürk','Aydın','Özdemir','Arslan','Doğan','Kılıç','Aslan','Çetin','Kara'])[1 + (g / 16) % 16],
            'tr_TR', 'Europe/Istanbul',
            CASE WHEN g % 10000 = 0 THEN ARRAY['ADMIN'] WHEN g % 100 = 0 THEN ARRAY['POWER_USER'] ELSE ARRAY['STANDARD_USER'] END,
            CASE WHEN g % 200 = 0 THEN 'BLOCKED' WHEN g % 50 = 0 THEN 'INACTIVE' ELSE 'ACTIVE' END,
            now() - (? - g) * interval '90 seconds'
       FROM generate_series(1, ?) AS g`,
    [count, count],
  );
  await db.raw(`INSERT INTO accounts (user_id, type, company) SELECT id, 'INDIVIDUAL', 'Bench' FROM users WHERE username LIKE 'user%@bench.example.com' AND random() < 1.0 / 3`);
}

/** The plan Postgres runs for the service's own SQL of `filter`, and the indexes it reads. */
async function explain(db: Knex, filter: UserFilter, after?: { at: string; id: string }): Promise<{ text: string; indexes: string[] }> {
  // The SQL the service itself sends for this page, as knex reports it (the query runs once more here).
  let sent: { sql: string; bindings: readonly unknown[] } | undefined;
  const listener = (query: { sql: string; bindings?: readonly unknown[] }) => {
    sent = { sql: query.sql, bindings: query.bindings ?? [] };
  };
  db.once('query', listener);
  await findUsers(db, filter, 51, after);
  if (sent === undefined) throw new Error('findUsers sent no query');
  const { sql, bindings } = sent;
  const result = await db.raw<{ rows: Array<{ 'QUERY PLAN': string }> }>(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, bindings as Knex.RawBinding[]);
  const text = result.rows.map((r) => r['QUERY PLAN']).join('\n');
  return { text, indexes: [...new Set([...text.matchAll(/Index (?:Only )?Scan (?:Backward )?using (\w+)|Bitmap Index Scan on (\w+)/g)].map((m) => m[1] ?? m[2] ?? ''))] };
}

/** `SAMPLES` requests one after the other (after `WARMUP`), as a load result of one connection. */
async function timed(url: string, token: string): Promise<LoadResult> {
  const once = async () => {
    const started = performance.now();
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    return { status: res.status, ms: performance.now() - started };
  };
  for (let i = 0; i < WARMUP; i += 1) await once();
  const started = performance.now();
  const samples: Array<{ status: number; ms: number }> = [];
  for (let i = 0; i < SAMPLES; i += 1) samples.push(await once());
  const elapsedS = (performance.now() - started) / 1000;
  const sorted = Float64Array.from(samples.map((s) => s.ms)).sort();
  const statuses: Record<string, number> = {};
  for (const { status } of samples) statuses[status] = (statuses[status] ?? 0) + 1;
  return {
    rps: samples.length / elapsedS,
    requests: samples.length,
    non2xx: samples.filter((s) => s.status < 200 || s.status > 299).length,
    errors: 0,
    p50Ms: quantile(sorted, 0.5),
    p99Ms: quantile(sorted, 0.99),
    meanMs: sorted.reduce((a, b) => a + b, 0) / sorted.length,
    statuses,
  };
}

/**
 * GET /v1/users on `BENCH_USERS` (a million) users: loads them into a scratch database with SQL, builds the
 * search indexes on them (migration 0010, timed), starts one more identity process on it and times a page
 * of an operator's searches straight to it, each beside the plan Postgres runs for it (EXPLAIN ANALYZE).
 */
export async function userSearchScenarios(ctx: RunContext): Promise<void> {
  const { stack } = needStack(ctx);
  const count = ctx.config.users;
  const databaseUrl = stack.database('identity_users');
  await ensureDatabaseExists(databaseUrl);
  const db = createDatabase({ url: databaseUrl, applicationName: 'bench-users', statementTimeoutMs: 1_800_000 });
  try {
    const before = migrations.slice(0, migrations.findIndex((m) => m.name === INDEX_MIGRATION));
    await migrateToLatest(db, before);
    ctx.progress(`users: loading ${count} users (generate_series)`);
    let started = performance.now();
    await loadUsers(db, count);
    ctx.facts.usersLoaded = count;
    ctx.facts.usersLoadS = (performance.now() - started) / 1000;
    ctx.progress('users: the search index migration on them');
    started = performance.now();
    await migrateToLatest(db, migrations);
    ctx.facts.usersIndexMigrationS = (performance.now() - started) / 1000;
    await db.raw('VACUUM ANALYZE users');
    await db.raw('VACUUM ANALYZE accounts');

    // A page from the middle of the BLOCKED users: keyset pages cost the same wherever they start.
    const middle = (await db('users').where({ status: 'BLOCKED' }).orderBy(['created_at', 'id']).offset(Math.floor(count / 400)).first('id', db.raw(`to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at`))) as { id: string; at: string };
    const rare = `user${Math.floor(count / 7)}`;
    const cases: SearchCase[] = [
      { id: 'users-q-username', label: `users ?q=${rare} (a username prefix)`, query: `q=${rare}`, filter: { q: rare } },
      { id: 'users-q-name', label: 'users ?q=zeynep (1 in 16 first names)', query: 'q=zeynep', filter: { q: 'zeynep' } },
      { id: 'users-role', label: 'users ?role=ADMIN (1 in 10 000)', query: 'role=ADMIN', filter: { role: 'ADMIN' } },
      { id: 'users-blocked', label: 'users ?status=BLOCKED, first page', query: 'status=BLOCKED', filter: { status: 'BLOCKED' } },
      {
        id: 'users-blocked-middle',
        label: 'users ?status=BLOCKED, a page from the middle',
        query: `status=BLOCKED&cursor=${encodeCursor('users', middle)}`,
        filter: { status: 'BLOCKED' },
      },
    ];

    // A second identity beside the stack's, on the database of a million users; the stack's environment
    // gives it the run's Redis prefix and the rest.
    const identity = await stack.start('identity', {
      as: 'identity-users',
      env: {
        IDENTITY_DATABASE_URL: databaseUrl,
        JWT_LOCAL_KEY_FILE: join(ctx.logDir, 'jwt-users.pem'),
        BOOTSTRAP_ADMIN_USERNAME: ctx.config.adminUsername,
        BOOTSTRAP_ADMIN_PASSWORD: ctx.config.adminPassword,
      },
    });
    const login = await fetch(`${identity.url}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: ctx.config.adminUsername, password: ctx.config.adminPassword }),
    });
    const { accessToken } = (await login.json()) as { accessToken: string };
    for (const c of cases) {
      ctx.progress(`${c.label}: ${SAMPLES} requests one at a time`);
      const result: ScenarioResult = { id: c.id, label: c.label, mode: 'closed', connections: 1, load: await timed(`${identity.url}/v1/users?${c.query}`, accessToken) };
      record(ctx, result);
      const plan = await explain(db, c.filter, c.id === 'users-blocked-middle' ? middle : undefined);
      ctx.facts[`${c.id} indexes`] = plan.indexes.join(', ') || 'none (sequential scan)';
      ctx.progress(`EXPLAIN ANALYZE of ${c.label}:\n${plan.text}`);
    }
  } finally {
    await db.destroy();
  }
}
