import type { Knex } from '@platform/service-kit/database';
import type { UserRecord } from '../user-records/user.ts';

/** A reset token row. */
export interface ResetTokenRecord {
  id: string;
  userId: string;
  expiresAt: Date;
  usedAt: Date | null;
  voidedAt: Date | null;
}

const TOKEN_COLUMNS = ['id', 'user_id as userId', 'expires_at as expiresAt', 'used_at as usedAt', 'voided_at as voidedAt'];

/** What a reset mail needs of its user. */
export type ResetRecipient = Pick<UserRecord, 'id' | 'username' | 'firstName'>;

/**
 * The user with that id, its row locked until the transaction ends (FOR KEY SHARE): a change of the
 * username (a key: it is unique) waits for the transaction, or has committed before and is seen here.
 * The weakest lock that does so, so that updates leaving the keys alone (a login's) do not queue behind
 * a reset request.
 */
export async function keyShareLockUser(trx: Knex.Transaction, id: string): Promise<ResetRecipient | undefined> {
  return (await trx('users').where({ id }).forKeyShare().first('id', 'username', 'first_name as firstName')) as ResetRecipient | undefined;
}

/**
 * Holds the user's reset tokens until the transaction ends (an advisory lock, not a row's): requests for one
 * user, from any process, take turns. Without it two concurrent requests each void only what their snapshot
 * shows, and the second insert breaks the one-open-token index (a 500, which would also tell an anonymous
 * caller that the user exists); and two could each count the e-mails sent before either is.
 */
export async function holdResetTokens(trx: Knex.Transaction, userId: string): Promise<void> {
  await trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [`password-reset:${userId}`]);
}

/** How many reset e-mails the user was sent in the last hour: its `password_reset.requested` events delivered by e-mail. */
export async function resetMailsInLastHour(trx: Knex.Transaction, userId: string): Promise<number> {
  const row = (await trx('audit_events')
    .where({ subject_user_id: userId, type: 'password_reset.requested' })
    .whereRaw("details->>'delivery' = 'e-mail'")
    .whereRaw("at > now() - interval '1 hour'")
    .count({ n: '*' })
    .first()) as { n: string | number } | undefined;
  return Number(row?.n ?? 0);
}

/**
 * Voids the user's open tokens and stores the new one, in the caller's transaction, which holds the user's
 * tokens (holdResetTokens; a partial index allows one open token).
 */
export async function replaceResetToken(trx: Knex.Transaction, userId: string, tokenHash: Buffer, expiresAt: Date): Promise<void> {
  await trx('password_reset_tokens').where({ user_id: userId }).whereNull('used_at').whereNull('voided_at').update({ voided_at: trx.fn.now() });
  await trx('password_reset_tokens').insert({ user_id: userId, token_hash: tokenHash, expires_at: expiresAt });
}

/** The user's token with that hash, unlocked: a cheap first look before any expensive work. */
export async function findResetToken(db: Knex, userId: string, tokenHash: Buffer): Promise<ResetTokenRecord | undefined> {
  return (await db('password_reset_tokens').where({ user_id: userId, token_hash: tokenHash }).first(TOKEN_COLUMNS)) as ResetTokenRecord | undefined;
}

/** The user's token with that hash, locked so that two resets with one token run one after the other. */
export async function lockResetToken(trx: Knex.Transaction, userId: string, tokenHash: Buffer): Promise<ResetTokenRecord | undefined> {
  return (await trx('password_reset_tokens')
    .where({ user_id: userId, token_hash: tokenHash })
    .forUpdate()
    .first(TOKEN_COLUMNS)) as ResetTokenRecord | undefined;
}

/** Marks the token used. */
export async function markResetTokenUsed(trx: Knex.Transaction, id: string): Promise<void> {
  await trx('password_reset_tokens').where({ id }).update({ used_at: trx.fn.now() });
}

/** Voids every unused token of the user (after a username change: a reset mail sent to the old address must not work). */
export async function voidOpenResetTokens(trx: Knex.Transaction, userId: string): Promise<void> {
  await trx('password_reset_tokens').where({ user_id: userId }).whereNull('used_at').whereNull('voided_at').update({ voided_at: trx.fn.now() });
}
