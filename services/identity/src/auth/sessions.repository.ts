import type { Knex } from '@platform/service-kit';

/** Why a session ended (the `sessions.revoked_reason` constraint lists the same). */
export type SessionEndReason =
  | 'logout'
  | 'refresh-token-reuse'
  | 'user-changed'
  | 'password-reset'
  | 'user-blocked'
  | 'username-changed'
  | 'max-lifetime';

/** A stored refresh token with what a refresh needs to decide, read under a row lock. */
export interface RefreshTokenRecord {
  id: string;
  sessionId: string;
  userId: string;
  expiresAt: Date;
  usedAt: Date | null;
  revokedAt: Date | null;
  sessionRevokedAt: Date | null;
  /** When the session started (login): its absolute lifetime counts from here. */
  sessionCreatedAt: Date;
}

/** Starts a session for the user; returns its id. */
export async function createSession(db: Knex, userId: string): Promise<string> {
  const [row] = (await db('sessions').insert({ user_id: userId }).returning('id')) as [{ id: string }];
  return row.id;
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
 * The refresh token with that hash, locked until the transaction ends: two refreshes with the same
 * token are serialised, so the second always sees the first one's rotation.
 */
export async function lockRefreshToken(trx: Knex.Transaction, tokenHash: Buffer): Promise<RefreshTokenRecord | undefined> {
  const row = (await trx('refresh_tokens as t')
    .join('sessions as s', 's.id', 't.session_id')
    .where('t.token_hash', tokenHash)
    .forUpdate('t')
    .first(
      't.id',
      't.session_id as sessionId',
      's.user_id as userId',
      't.expires_at as expiresAt',
      't.used_at as usedAt',
      't.revoked_at as revokedAt',
      's.revoked_at as sessionRevokedAt',
      's.created_at as sessionCreatedAt',
    )) as RefreshTokenRecord | undefined;
  return row;
}

/** Marks a refresh token as rotated. */
export async function markRefreshTokenUsed(db: Knex, id: string): Promise<void> {
  await db('refresh_tokens').where({ id }).update({ used_at: db.fn.now() });
}

/**
 * Ends one session: it and every refresh token of it stop working. Returns false when it had ended
 * already (then nothing changes). Two statements: call it inside a transaction.
 */
export async function endSession(db: Knex, sessionId: string, reason: SessionEndReason): Promise<boolean> {
  const ended = await db('sessions').where({ id: sessionId }).whereNull('revoked_at').update({ revoked_at: db.fn.now(), revoked_reason: reason });
  await db('refresh_tokens').where({ session_id: sessionId }).whereNull('revoked_at').update({ revoked_at: db.fn.now() });
  return ended > 0;
}

/** Ends every live session of a user (password change, status change, reset); returns their ids. */
export async function endUserSessions(db: Knex, userId: string, reason: SessionEndReason): Promise<string[]> {
  const ended = (await db('sessions')
    .where({ user_id: userId })
    .whereNull('revoked_at')
    .update({ revoked_at: db.fn.now(), revoked_reason: reason })
    .returning('id')) as Array<{ id: string }>;
  const ids = ended.map((row) => row.id);
  if (ids.length > 0) {
    await db('refresh_tokens').whereIn('session_id', ids).whereNull('revoked_at').update({ revoked_at: db.fn.now() });
  }
  return ids;
}
