import { UnauthorizedError } from '@platform/errors';
import type { Knex } from '@platform/service-kit/database';
import { type Position, exactInstant } from '../pagination/cursor.ts';

/** Why a session ended (the `sessions.revoked_reason` constraint lists the same). */
export type SessionEndReason =
  | 'logout'
  | 'refresh-token-reuse'
  | 'user-changed'
  | 'password-reset'
  | 'user-blocked'
  | 'username-changed'
  | 'max-lifetime'
  | 'revoked'
  | 'second-factor-failures'
  | 'second-factor-changed';

/** A stored refresh token with what a refresh needs to decide, read under a row lock. */
export interface RefreshTokenRecord {
  id: string;
  sessionId: string;
  userId: string;
  expiresAt: Date;
  usedAt: Date | null;
  /** When this token itself was revoked. */
  revokedAt: Date | null;
  /** When its session ended (the column is `sessions.revoked_at`). */
  sessionEndedAt: Date | null;
  /** When the session started (login): its absolute lifetime counts from here. */
  sessionCreatedAt: Date;
  /** The session's assurance level (CONTRACT.md part 15): a refresh keeps it. */
  sessionAal: 1 | 2;
  /** The client key the session was opened under (CONTRACT.md part 16: its tokens are bound to it). */
  sessionClientKeyId: string | null;
  /** When the token was issued (its row written). */
  issuedAt: Date;
}

/** A refresh token's row and its session's, as `RefreshTokenRecord` names them. */
const REFRESH_TOKEN_COLUMNS = [
  't.id',
  't.session_id as sessionId',
  's.user_id as userId',
  't.expires_at as expiresAt',
  't.used_at as usedAt',
  't.revoked_at as revokedAt',
  's.revoked_at as sessionEndedAt',
  's.created_at as sessionCreatedAt',
  's.aal as sessionAal',
  's.client_key_id as sessionClientKeyId',
  't.created_at as issuedAt',
];

/** The refresh token with that hash and its session, read without a lock (introspection: nothing is changed). */
export async function findRefreshToken(db: Knex, tokenHash: Buffer): Promise<RefreshTokenRecord | undefined> {
  return (await db('refresh_tokens as t')
    .join('sessions as s', 's.id', 't.session_id')
    .where('t.token_hash', tokenHash)
    .first(REFRESH_TOKEN_COLUMNS)) as RefreshTokenRecord | undefined;
}

/** Where a session was opened: the client key and source address of its login, when known. */
export interface SessionOrigin {
  clientKeyId: string | null;
  sourceAddress: string | null;
}

/** Starts a session for the user; returns its id. */
export async function createSession(db: Knex, userId: string, origin: SessionOrigin): Promise<{ id: string; createdAt: Date }> {
  const [row] = (await db('sessions')
    .insert({ user_id: userId, client_key_id: origin.clientKeyId, source_address: origin.sourceAddress })
    .returning(['id', 'created_at as createdAt'])) as [{ id: string; createdAt: Date }];
  return row;
}

/** A session as GET /v1/auth/sessions shows it, with the position a page after it starts from. */
export interface LiveSessionRecord extends SessionOrigin {
  id: string;
  createdAt: Date;
  lastUsedAt: Date;
  expiresAt: Date;
  position: Position;
}

/**
 * Up to `limit` live sessions of a user, newest first, after `after` when given. Live: not ended, and
 * neither past its absolute lifetime nor past the expiry of its current refresh token (which is when it
 * expires, whichever comes first).
 */
export async function findLiveSessions(
  db: Knex,
  userId: string,
  maxLifetimeS: number,
  limit: number,
  after: Position | undefined,
): Promise<LiveSessionRecord[]> {
  const cursor = after === undefined ? '' : 'AND (s.created_at, s.id) < (?::timestamptz, ?::uuid)';
  const result = await db.raw<{ rows: Array<Omit<LiveSessionRecord, 'position'> & { positionAt: string }> }>(
    `SELECT s.id, s.created_at AS "createdAt", coalesce(s.last_used_at, s.created_at) AS "lastUsedAt",
            s.client_key_id AS "clientKeyId", s.source_address AS "sourceAddress",
            least(s.created_at + make_interval(secs => ?), t.expires_at) AS "expiresAt",
            ${exactInstant('s.created_at')} AS "positionAt"
       FROM sessions s
       CROSS JOIN LATERAL (
         SELECT max(r.expires_at) AS expires_at FROM refresh_tokens r
          WHERE r.session_id = s.id AND r.used_at IS NULL AND r.revoked_at IS NULL
       ) t
      WHERE s.user_id = ? AND s.revoked_at IS NULL
        AND t.expires_at > now() AND s.created_at + make_interval(secs => ?) > now()
        ${cursor}
      ORDER BY s.created_at DESC, s.id DESC
      LIMIT ?`,
    [maxLifetimeS, userId, maxLifetimeS, ...(after === undefined ? [] : [after.at, after.id]), limit],
  );
  return result.rows.map(({ positionAt, ...row }) => ({ ...row, position: { at: positionAt, id: row.id } }));
}

/** A session of any state, for deciding who may end it. */
export async function findSession(db: Knex, sessionId: string): Promise<{ id: string; userId: string } | undefined> {
  return (await db('sessions').where({ id: sessionId }).first('id', 'user_id as userId')) as { id: string; userId: string } | undefined;
}

/**
 * Whether the session of `principal` still lives, for a change made on its behalf, once the change holds the
 * row of the user it changes: a block, role change or logout of the caller that committed meanwhile is seen.
 * When the caller is another user (an ADMIN), or the change makes a user (`changedUserId` undefined), its own
 * row is held too (shared), so a change of the caller in flight (a demotion, a block) commits first and its
 * ending is seen as well.
 */
export async function callerSessionLives(trx: Knex.Transaction, caller: { userId: string; sessionId: string }, changedUserId: string | undefined): Promise<boolean> {
  if (caller.userId !== changedUserId) await trx('users').where({ id: caller.userId }).forShare().first('id');
  // Held (shared) to the end of the change: a logout or an ending of the session in flight commits first and is
  // seen here, or waits for the change; it never commits between this read and the change's own commit.
  return (await trx('sessions').where({ id: caller.sessionId }).whereNull('revoked_at').forShare().first('id')) !== undefined;
}

/**
 * Before a change takes the row of the user it changes: the caller's own row, shared, when its id sorts
 * first. Users' rows are then taken in the order of their ids whoever changes whom, so two ADMINs changing
 * each other at once (a demotion each way) wait for one another instead of deadlocking, each holding the
 * other's row and asking for its own (`callerSessionLives` takes the caller's row after the changed one's).
 */
export async function holdCallerFirst(trx: Knex.Transaction, caller: { userId: string }, changedUserId: string): Promise<void> {
  if (caller.userId < changedUserId) await trx('users').where({ id: caller.userId }).forShare().first('id');
}

/**
 * `callerSessionLives` as the change's answer: 401 `Bad Credentials` when the caller's session ended
 * meanwhile (CONTRACT.md part 4: a privilege taken away acts at once). Thrown inside the change's
 * transaction, it rolls the change back: nothing is made.
 */
export async function assertCallerSessionLives(trx: Knex.Transaction, caller: { userId: string; sessionId: string }, changedUserId: string | undefined): Promise<void> {
  if (!(await callerSessionLives(trx, caller, changedUserId))) {
    throw new UnauthorizedError('Bad Credentials', { cause: new Error('the caller\'s session ended while the change waited') });
  }
}

/** A refresh: the session was used now. */
export async function touchSession(db: Knex, sessionId: string): Promise<void> {
  await db('sessions').where({ id: sessionId }).update({ last_used_at: db.fn.now() });
}

/** Stores a refresh token's hash for a session. */
export async function insertRefreshToken(
  db: Knex,
  token: { sessionId: string; tokenHash: Buffer; expiresAt: Date; parentId?: string },
): Promise<void> {
  await db('refresh_tokens').insert({
    session_id: token.sessionId,
    token_hash: token.tokenHash,
    expires_at: token.expiresAt,
    parent_id: token.parentId ?? null,
  });
}

/**
 * The refresh token with that hash and its session, both locked until the transaction ends, the session
 * first: every transaction that ends a session or rotates its tokens takes the session's row before any of
 * its refresh tokens (`lockSessions`), so a logout and a refresh of one session queue on the session
 * instead of each holding what the other waits for (a deadlock, answered 500, that left the session alive).
 * Two refreshes with the same token are serialised, so the second always sees the first one's rotation.
 */
export async function lockRefreshToken(trx: Knex.Transaction, tokenHash: Buffer): Promise<RefreshTokenRecord | undefined> {
  // A token's session never changes: read without a lock, it names the row to lock first.
  const owner = (await trx('refresh_tokens').where('token_hash', tokenHash).first('session_id as sessionId')) as { sessionId: string } | undefined;
  if (owner === undefined) return undefined;
  await trx('sessions').where({ id: owner.sessionId }).forNoKeyUpdate().first('id');
  const row = (await trx('refresh_tokens as t')
    .join('sessions as s', 's.id', 't.session_id')
    .where('t.token_hash', tokenHash)
    .forUpdate('t')
    .first(REFRESH_TOKEN_COLUMNS)) as RefreshTokenRecord | undefined;
  return row;
}

/**
 * Locks the live sessions among `sessionIds`, or every live session of `userId`, in the order of their
 * ids (the lock order of the header above `lockRefreshToken`; one order also keeps two endings of a user's
 * sessions from locking them crosswise). Returns the ids locked: those still live once their locks are held.
 */
export async function lockSessions(trx: Knex.Transaction, which: { sessionIds: readonly string[] } | { userId: string }): Promise<string[]> {
  const query = trx('sessions').whereNull('revoked_at').orderBy('id').forNoKeyUpdate().select('id');
  if ('userId' in which) query.where({ user_id: which.userId });
  else query.whereIn('id', which.sessionIds);
  return ((await query) as Array<{ id: string }>).map((row) => row.id);
}

/** Marks a refresh token as rotated. */
export async function markRefreshTokenUsed(db: Knex, id: string): Promise<void> {
  await db('refresh_tokens').where({ id }).update({ used_at: db.fn.now() });
}

/** A session that ended, and when: `endedAt` (column `revoked_at`) for the time its tokens may live, `position` to page on. */
export interface EndedSession {
  id: string;
  endedAt: Date;
  /** `revoked_at` exactly (microseconds, as `exactInstant` gives it) and the id: where the next page starts. */
  position: Position;
}

/**
 * Sessions ended after `since`, oldest first, `limit` of them after `after` when given: what the
 * revocation mirror must hold while their access tokens may still live (index sessions_revoked_recently).
 * Paged on the exact instant: a Date keeps milliseconds, and when a page ended within a millisecond shared
 * by more rows (one statement ends a user's sessions with one now()), the page after it began again at the
 * same rows, for ever.
 */
export async function sessionsEndedSince(db: Knex, since: Date, limit: number, after?: Position): Promise<EndedSession[]> {
  const query = db('sessions')
    .where('revoked_at', '>', since)
    .orderBy([{ column: 'revoked_at' }, { column: 'id' }])
    .limit(limit)
    .select('id', 'revoked_at as endedAt', db.raw(`${exactInstant('revoked_at')} AS "positionAt"`));
  if (after !== undefined) query.whereRaw('(revoked_at, id) > (?::timestamptz, ?::uuid)', [after.at, after.id]);
  const rows = (await query) as Array<{ id: string; endedAt: Date; positionAt: string }>;
  return rows.map(({ positionAt, ...row }) => ({ ...row, position: { at: positionAt, id: row.id } }));
}
