import knexModule, { type Knex } from 'knex';
import pg from 'pg';
import type { AppEnv } from './config.ts';
import type { ReadinessCheck } from './health.ts';
import { currentRequest } from './http-logger.ts';
import type { Logger } from './logger.ts';

// `@platform/service-kit/database`, apart from the main entry so that a process without a database (the
// gateway) does not load knex and pg.

// knex ships CommonJS only: its factory is the default export under Node's ESM loader.
const knex = knexModule;

export type { Knex } from 'knex';

export interface DatabaseOptions {
  /** `postgres://user:password@host:port/database` */
  url: string;
  /** Shown in `pg_stat_activity`, so a DBA can tell the services apart. */
  applicationName: string;
  poolMax?: number;
  /** How long a new connection may take before the attempt fails. */
  connectTimeoutMs?: number;
  /** Server-side limit for one statement. */
  statementTimeoutMs?: number;
}

/**
 * A knex instance on Postgres with limits that fail fast instead of hanging: connect, pool acquire
 * and statement timeouts, and a pool that starts empty so a process can start while Postgres is down.
 */
export function createDatabase(options: DatabaseOptions): Knex {
  const connectTimeoutMs = options.connectTimeoutMs ?? 2000;
  const statementTimeoutMs = options.statementTimeoutMs ?? 5000;
  return knex({
    client: 'pg',
    connection: {
      connectionString: options.url,
      application_name: options.applicationName,
      connectionTimeoutMillis: connectTimeoutMs,
      statement_timeout: statementTimeoutMs,
      query_timeout: statementTimeoutMs + 1000,
    },
    pool: { min: 0, max: options.poolMax ?? 10 },
    acquireConnectionTimeout: connectTimeoutMs + 500,
  });
}

/**
 * SQLSTATEs of a transaction that lost a race with another and was rolled back by Postgres: 40001
 * (serialization_failure) and 40P01 (deadlock_detected). Run again, it may well succeed.
 */
export function isTransactionConflict(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return code === '40001' || code === '40P01';
}

/** How many times `retryingTransaction` runs a transaction that keeps losing races before it gives up. */
const CONFLICT_ATTEMPTS = 4;

/**
 * Runs `work` in one transaction that keeps the deadline of the request it serves (`RequestDeadline`, from
 * the request's async context; none outside a request: start-up, jobs, migrations). It starts and commits
 * only before the deadline and never after the deadline's 503 was sent, so that a 503 means nothing was
 * changed and a retry applies the change once; it throws that 503 (rolled back) instead. While the deadline
 * is nearer than the connection's statement timeout, its statements get only the time left, so a wait for
 * a lock ends with the deadline, not seconds after it.
 */
export async function deadlineTransaction<T>(db: Knex, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  const deadline = currentRequest()?.deadline;
  if (deadline === undefined) return db.transaction(work);
  deadline.assertOpen();
  let settle: ((committed: boolean) => void) | undefined;
  try {
    const result = await db.transaction(async (trx) => {
      const leftMs = Math.ceil(deadline.changeBudgetMs());
      if (leftMs < statementTimeoutOf(db)) await trx.raw("SELECT set_config('statement_timeout', ?, true)", [String(Math.max(1, leftMs))]);
      const value = await work(trx);
      // Thrown here, it rolls the transaction back: the deadline passed, or its 503 was sent.
      settle = deadline.claimCommit();
      return value;
    });
    settle?.(true);
    return result;
  } catch (err) {
    // A commit that failed: the deadline's 503 may be sent again.
    settle?.(false);
    throw err;
  }
}

/** The statement timeout the connections of `db` were opened with (`createDatabase`), or Infinity when unknown (none). */
function statementTimeoutOf(db: Knex): number {
  const connection = (db.client as { config?: { connection?: { statement_timeout?: unknown } } }).config?.connection;
  const ms = connection?.statement_timeout;
  return typeof ms === 'number' && ms > 0 ? ms : Infinity;
}

/**
 * Runs `work` in one transaction (`deadlineTransaction`), and runs it again, from the start, when Postgres
 * rolled it back for a conflict with another transaction (`isTransactionConflict`), up to a few times with a
 * short random pause and never past the request's deadline: two transactions that take the same rows in
 * different orders do not both fail. The work must be safe to run again (everything it does goes through
 * `trx`). The last conflict is thrown as it came: callers map it to 503 with Retry-After (@platform/errors).
 */
export async function retryingTransaction<T>(db: Knex, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await deadlineTransaction(db, work);
    } catch (err) {
      if (!isTransactionConflict(err) || attempt >= CONFLICT_ATTEMPTS) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
    }
  }
}

/** The database name of a Postgres URL. */
export function databaseName(url: string): string {
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  if (name === '') throw new Error('the database URL names no database');
  return name;
}

/** The same server, but the `postgres` maintenance database: where databases are created and dropped. */
export function maintenanceUrl(url: string): string {
  const u = new URL(url);
  u.pathname = '/postgres';
  return u.toString();
}

/**
 * Creates the database named in `url` when it does not exist yet (used in `local` and by tests).
 * Safe when several processes race: "already exists" counts as success. Returns true when it created it.
 */
export async function ensureDatabaseExists(url: string, logger?: Logger): Promise<boolean> {
  const name = databaseName(url);
  const client = new pg.Client({ connectionString: maintenanceUrl(url), connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount !== 0) return false;
    try {
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
    } catch (err) {
      // 42P04 duplicate_database, 23505 unique_violation: another process created it first.
      const code = (err as { code?: string }).code;
      if (code === '42P04' || code === '23505') return false;
      throw err;
    }
    logger?.info({ database: name }, 'created database');
    return true;
  } finally {
    await client.end();
  }
}

/** Drops a database, ending its open connections first (tests tear down their databases with this). */
export async function dropDatabase(url: string): Promise<void> {
  const name = databaseName(url);
  const client = new pg.Client({ connectionString: maintenanceUrl(url), connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/** One schema change: `up` applies it, `down` reverts it. Both run inside a transaction. */
export interface Migration {
  /** Unique and sortable, e.g. `0001_create_users`: recorded in `knex_migrations`. */
  name: string;
  up: (db: Knex) => Promise<void>;
  down: (db: Knex) => Promise<void>;
}

/**
 * A knex migration source over an explicit, ordered list: no directory scanning, so the same list
 * works from TypeScript sources and from compiled output, and a migration cannot be forgotten by a glob.
 */
function migrationSource(migrations: readonly Migration[]): Knex.MigrationSource<Migration> {
  return {
    getMigrations: async () => [...migrations],
    getMigrationName: (m) => m.name,
    getMigration: async (m) => ({ up: m.up, down: m.down }),
  };
}

/** Applies every pending migration; returns the names it applied. */
export async function migrateToLatest(db: Knex, migrations: readonly Migration[]): Promise<string[]> {
  const [, applied] = (await db.migrate.latest({ migrationSource: migrationSource(migrations) })) as [number, string[]];
  return applied;
}

/** Readiness: Postgres answers a trivial query. */
export function databaseCheck(db: Knex): ReadinessCheck {
  return {
    name: 'postgres',
    check: async () => {
      await db.raw('select 1');
    },
  };
}

export interface ConnectDatabaseOptions {
  appEnv: AppEnv;
  url: string;
  applicationName: string;
  migrations: readonly Migration[];
  logger: Logger;
  /** Apply pending migrations now; defaults to `appEnv === 'local'` (elsewhere a migration Job does it). */
  migrate?: boolean;
  /** How long a new connection may take before the attempt fails. */
  connectTimeoutMs?: number;
  /** Server-side limit of one statement (the client gives up one second later). */
  statementTimeoutMs?: number;
}

/**
 * Opens a service's database. In `local` it first creates the database when missing and applies
 * pending migrations, so a fresh machine needs no setup; in `test`/`prod` a migration Job does that.
 */
export async function connectDatabase(options: ConnectDatabaseOptions): Promise<Knex> {
  const local = options.appEnv === 'local';
  if (local) await ensureDatabaseExists(options.url, options.logger);
  const db = createDatabase({
    url: options.url,
    applicationName: options.applicationName,
    connectTimeoutMs: options.connectTimeoutMs,
    statementTimeoutMs: options.statementTimeoutMs,
  });
  if (options.migrate ?? local) {
    const applied = await migrateToLatest(db, options.migrations);
    options.logger.info({ database: databaseName(options.url), applied }, 'migrations up to date');
  }
  return db;
}
