import type { Role } from '@platform/auth';
import type { Knex } from '@platform/service-kit/database';
import { type Position, exactInstant } from '../pagination/cursor.ts';
import type { UserRecord, UserStatus } from './user.ts';

/**
 * The one mapping of this file: each field of a UserRecord and the column that holds it. Reads alias the
 * columns to the fields (COLUMNS), writes turn fields into columns (`rowOf`). Scoped to this repository:
 * a knex-wide postProcessResponse/wrapIdentifier would change what every other repository's queries return.
 */
const COLUMN_OF = {
  id: 'id',
  username: 'username',
  passwordHash: 'password_hash',
  firstName: 'first_name',
  midName: 'mid_name',
  lastName: 'last_name',
  locale: 'locale',
  timezone: 'timezone',
  roles: 'roles',
  status: 'status',
  failedLoginCount: 'failed_login_count',
} as const satisfies Record<keyof UserRecord, string>;

type UserField = keyof typeof COLUMN_OF;

/** The select list that reads a row as a UserRecord. */
const COLUMNS = Object.entries(COLUMN_OF).map(([field, column]) => (field === column ? column : `${column} as ${field}`));

/** The columns to write for the given fields: each one that is not undefined, under its column; any other key is left out. */
function rowOf(fields: Partial<Record<UserField, unknown>>): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const [field, column] of Object.entries(COLUMN_OF) as Array<[UserField, string]>) {
    const value = fields[field];
    if (value !== undefined) row[column] = value;
  }
  return row;
}

/** The filters of GET /v1/users; all given must hold. */
export interface UserFilter {
  /** Exact, case-insensitively. */
  username?: string;
  /** A case-insensitive prefix of the username, first name or last name. */
  q?: string;
  status?: UserStatus;
  role?: Role;
}

/** `text` with LIKE's wildcards and escape character made literal. */
function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * The query of `findUsers`. Each filter matches an index of migration 0010 as written here (bench/groups/users.ts
 * captures the SQL findUsers sends and EXPLAINs it to list the indexes read): keep the expressions in step.
 */
function usersQuery(db: Knex, filter: UserFilter, limit: number, after: Position | undefined): Knex.QueryBuilder {
  const query = db('users')
    .select(...COLUMNS, db.raw(`${exactInstant('created_at')} AS "positionAt"`))
    .orderBy([
      { column: 'created_at', order: 'asc' },
      { column: 'id', order: 'asc' },
    ])
    .limit(limit);
  if (filter.username !== undefined) query.where({ username: filter.username });
  if (filter.status !== undefined) query.where({ status: filter.status });
  if (filter.role !== undefined) query.whereRaw('roles @> ARRAY[?]::text[]', [filter.role]);
  if (filter.q !== undefined) {
    const prefix = `${likeLiteral(filter.q)}%`;
    query.where((q) =>
      q
        .whereRaw("lower(username::text) LIKE lower(?) ESCAPE '\\'", [prefix])
        .orWhereRaw("lower(first_name) LIKE lower(?) ESCAPE '\\'", [prefix])
        .orWhereRaw("lower(last_name) LIKE lower(?) ESCAPE '\\'", [prefix]),
    );
  }
  if (after !== undefined) query.whereRaw('(created_at, id) > (?::timestamptz, ?::uuid)', [after.at, after.id]);
  return query;
}

/** Up to `limit` users matching the filter in creation order (then id), after `after` when given. */
export async function findUsers(db: Knex, filter: UserFilter, limit: number, after: Position | undefined): Promise<Array<UserRecord & { position: Position }>> {
  const rows = (await usersQuery(db, filter, limit, after)) as Array<UserRecord & { positionAt: string }>;
  return rows.map(({ positionAt, ...user }) => ({ ...user, position: { at: positionAt, id: user.id } }));
}

/** The user with that username, compared case-insensitively (the column is citext). */
export async function findUserByUsername(db: Knex, username: string): Promise<UserRecord | undefined> {
  return (await db('users').where({ username }).first(COLUMNS)) as UserRecord | undefined;
}

/** The user with that id. */
export async function findUserById(db: Knex, id: string): Promise<UserRecord | undefined> {
  return (await db('users').where({ id }).first(COLUMNS)) as UserRecord | undefined;
}

/** The user with that id, locked until the transaction ends: changes of one user take turns. */
export async function lockUserById(trx: Knex.Transaction, id: string): Promise<UserRecord | undefined> {
  return (await trx('users').where({ id }).forUpdate().first(COLUMNS)) as UserRecord | undefined;
}

/** The fields a new user is stored with. */
export interface NewUser {
  username: string;
  passwordHash: string | null;
  firstName: string;
  midName?: string | null;
  lastName: string;
  locale: string;
  timezone: string;
  roles: readonly string[];
  status: UserStatus;
}

/** Inserts a user unless the username is taken (case-insensitively); returns the new user or undefined. */
export async function insertUserIfAbsent(db: Knex, user: NewUser): Promise<UserRecord | undefined> {
  const row = rowOf({ ...user, midName: user.midName ?? null });
  const rows = (await db('users').insert(row).onConflict('username').ignore().returning(COLUMNS)) as UserRecord[];
  return rows[0];
}

/** The outcome of one failed login for a known user. */
export interface FailedLoginOutcome {
  failedLoginCount: number;
  /** True only for the failure that moved the user from ACTIVE to BLOCKED. */
  blockedNow: boolean;
}

/**
 * Counts one failed login in a single statement under the row lock, so N concurrent failures add
 * exactly N. An ACTIVE user whose count passes `maxFailures` becomes BLOCKED in the same statement.
 */
export async function recordFailedLogin(db: Knex, userId: string, maxFailures: number): Promise<FailedLoginOutcome> {
  const result = await db.raw<{ rows: Array<{ failedLoginCount: number; blockedNow: boolean }> }>(
    `WITH before AS (SELECT id, status FROM users WHERE id = ? FOR UPDATE)
     UPDATE users AS u
        SET failed_login_count = u.failed_login_count + 1,
            status = CASE WHEN u.status = 'ACTIVE' AND u.failed_login_count + 1 > ? THEN 'BLOCKED' ELSE u.status END
       FROM before
      WHERE u.id = before.id
     RETURNING u.failed_login_count AS "failedLoginCount",
               (before.status = 'ACTIVE' AND u.status = 'BLOCKED') AS "blockedNow"`,
    [userId, maxFailures],
  );
  const row = result.rows[0];
  return { failedLoginCount: row?.failedLoginCount ?? 0, blockedNow: row?.blockedNow ?? false };
}

/** A good login clears the failure count and records when it happened. */
/**
 * Records a login of the user as it was when its password was checked: the failure count cleared (when the
 * password completes the login: a user who must show a second factor clears it with that factor), on the
 * row locked until the transaction ends, and only while the user is still ACTIVE with that very password
 * hash. Returns the user as it is now (its roles, its username), or undefined when it changed meanwhile:
 * a change of roles, status or password that commits while the password is being checked either comes
 * before (and is seen here) or waits for this login and then ends its session.
 */
export async function recordSuccessfulLogin(trx: Knex.Transaction, user: Pick<UserRecord, 'id' | 'passwordHash'>, options: { clearFailures: boolean }): Promise<UserRecord | undefined> {
  const rows = (await trx('users')
    .where({ id: user.id, status: 'ACTIVE', password_hash: user.passwordHash })
    .update({ ...(options.clearFailures ? { failed_login_count: 0 } : {}), last_login_at: trx.fn.now() })
    .returning(COLUMNS)) as UserRecord[];
  return rows[0];
}

/** Lifts a block: status ACTIVE, count 0. Returns the user, or undefined for an unknown id. */
export async function unblockUserRow(db: Knex, userId: string): Promise<UserRecord | undefined> {
  const rows = (await db('users').where({ id: userId }).update({ status: 'ACTIVE', failed_login_count: 0 }).returning(COLUMNS)) as UserRecord[];
  return rows[0];
}

/** The stored columns behind the fields of PATCH /v1/users/update. */
export interface UserChanges {
  username?: string;
  passwordHash?: string;
  firstName?: string;
  midName?: string;
  lastName?: string;
  locale?: string;
  timezone?: string;
  roles?: readonly string[];
  status?: UserStatus;
  /** Set with a status of ACTIVE: an ADMIN reactivating a user also clears the failure count. */
  failedLoginCount?: number;
}

/** True for Postgres's unique violation on the username. */
export function isUsernameTaken(err: unknown): boolean {
  const pgError = err as { code?: string; constraint?: string };
  return pgError.code === '23505' && pgError.constraint === 'users_username_key';
}

/** Applies the changes; returns the updated user, or undefined for an unknown id. */
export async function updateUserRow(db: Knex, userId: string, changes: UserChanges): Promise<UserRecord | undefined> {
  const row = rowOf(changes);
  if (Object.keys(row).length === 0) return findUserById(db, userId);
  const rows = (await db('users').where({ id: userId }).update(row).returning(COLUMNS)) as UserRecord[];
  return rows[0];
}
