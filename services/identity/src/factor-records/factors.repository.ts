import type { Role } from '@platform/auth';
import type { Knex } from '@platform/service-kit/database';

/** A second factor as stored (its secret still sealed). */
export interface FactorRecord {
  id: string;
  userId: string;
  type: 'TOTP';
  status: 'PENDING' | 'ACTIVE';
  secret: Buffer;
  lastStep: number | null;
  createdAt: Date;
  lastUsedAt: Date | null;
}

const COLUMNS = ['id', 'user_id as userId', 'type', 'status', 'secret', 'last_step as lastStep', 'created_at as createdAt', 'last_used_at as lastUsedAt'];

/** `last_step` comes back from Postgres as text (bigint): a number again. */
function factorOf(row: (Omit<FactorRecord, 'lastStep'> & { lastStep: string | number | null }) | undefined): FactorRecord | undefined {
  return row === undefined ? undefined : { ...row, lastStep: row.lastStep === null ? null : Number(row.lastStep) };
}

/** A new pending TOTP factor of `userId` with this id and sealed secret; the user's older pending ones go. */
export async function insertPendingFactor(trx: Knex.Transaction, factor: { id: string; userId: string; secret: Buffer }): Promise<FactorRecord> {
  await trx('second_factors').where({ user_id: factor.userId, status: 'PENDING' }).delete();
  const [row] = await trx('second_factors').insert({ id: factor.id, user_id: factor.userId, type: 'TOTP', status: 'PENDING', secret: factor.secret }).returning(COLUMNS);
  return factorOf(row) as FactorRecord;
}

/** The user's active TOTP factor, if any. */
export async function findActiveFactor(db: Knex, userId: string): Promise<FactorRecord | undefined> {
  return factorOf(await db('second_factors').where({ user_id: userId, type: 'TOTP', status: 'ACTIVE' }).first(COLUMNS));
}

/** The factor `id` of `userId` (another user's is not found), locked until the transaction ends. */
export async function lockFactor(trx: Knex.Transaction, userId: string, id: string): Promise<FactorRecord | undefined> {
  return factorOf(await trx('second_factors').where({ id, user_id: userId }).forUpdate().first(COLUMNS));
}

/** Every factor of a user, oldest first. */
export async function listUserFactors(db: Knex, userId: string): Promise<FactorRecord[]> {
  return ((await db('second_factors').where({ user_id: userId }).orderBy([{ column: 'created_at' }, { column: 'id' }]).select(COLUMNS)) as Parameters<typeof factorOf>[0][]).map(
    (row) => factorOf(row) as FactorRecord,
  );
}

/** Activates a pending factor; false when another of the user's became active first (the unique index). */
export async function activateFactor(trx: Knex.Transaction, id: string): Promise<boolean> {
  try {
    return (await trx.transaction((savepoint) => savepoint('second_factors').where({ id, status: 'PENDING' }).update({ status: 'ACTIVE', confirmed_at: savepoint.fn.now() }))) === 1;
  } catch (err) {
    if ((err as { code?: string }).code === '23505') return false;
    throw err;
  }
}

/**
 * Spends TOTP step `step` of factor `id`: true when it is later than every step used before (a step is used
 * once, and no earlier one after it). One statement: of two requests with the same code, one wins.
 */
export async function useStep(db: Knex, id: string, step: number): Promise<boolean> {
  const updated = await db('second_factors')
    .where({ id })
    .andWhere((where) => where.whereNull('last_step').orWhere('last_step', '<', step))
    .update({ last_step: step, last_used_at: db.fn.now() });
  return updated === 1;
}

/** Stores a factor's recovery codes (their hashes). */
export async function insertRecoveryCodes(trx: Knex.Transaction, factorId: string, hashes: readonly Buffer[]): Promise<void> {
  await trx('recovery_codes').insert(hashes.map((hash) => ({ factor_id: factorId, code_hash: hash })));
}

/** Spends a recovery code of factor `factorId`: true when it was there and unused. One statement: used once. */
export async function useRecoveryCode(db: Knex, factorId: string, hash: Buffer): Promise<boolean> {
  const used = await db('recovery_codes').where({ factor_id: factorId, code_hash: hash }).whereNull('used_at').update({ used_at: db.fn.now() });
  if (used === 1) await db('second_factors').where({ id: factorId }).update({ last_used_at: db.fn.now() });
  return used === 1;
}

/** Deletes the pending factors of `userId` but `keptId` (enrolments started beside the one confirmed); returns how many. */
export async function deletePendingFactorsBut(trx: Knex.Transaction, userId: string, keptId: string): Promise<number> {
  return await trx('second_factors').where({ user_id: userId, status: 'PENDING' }).whereNot({ id: keptId }).delete();
}

/** Deletes factors of `userId` (one, or all): their recovery codes go with them; returns the ids deleted. */
export async function deleteFactors(trx: Knex.Transaction, userId: string, id?: string): Promise<string[]> {
  const query = trx('second_factors').where({ user_id: userId });
  if (id !== undefined) query.where({ id });
  return ((await query.delete().returning('id')) as Array<{ id: string }>).map((row) => row.id);
}

/** Whether the user has an active factor: its tokens then need the second factor (CONTRACT.md part 15). */
export async function hasActiveFactor(db: Knex, userId: string): Promise<boolean> {
  return (await db('second_factors').where({ user_id: userId, status: 'ACTIVE' }).first('id')) !== undefined;
}

/**
 * Whether the tokens of `user` need the second factor (their `sfr`, CONTRACT.md part 15): it has an active
 * factor, or holds one of `requiredRoles` (SECOND_FACTOR_REQUIRED_ROLES), factor or not.
 */
export async function needsSecondFactor(db: Knex, user: { id: string; roles: readonly Role[] }, requiredRoles: readonly Role[]): Promise<boolean> {
  if (user.roles.some((role) => requiredRoles.includes(role))) return true;
  return hasActiveFactor(db, user.id);
}
