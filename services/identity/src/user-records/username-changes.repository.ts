import type { Knex } from '@platform/service-kit/database';

/**
 * Counts one more change of the user's username today (UTC) and returns today's count, in the caller's
 * transaction: the upsert locks the day's row, so concurrent changes count one after the other, and a
 * change that rolls back takes its count with it. Past days' rows of the user go in the same breath.
 */
export async function countUsernameChange(trx: Knex.Transaction, userId: string): Promise<number> {
  await trx('username_change_counts').where({ user_id: userId }).where('day', '<', trx.raw("(now() AT TIME ZONE 'UTC')::date")).delete();
  const result = await trx.raw<{ rows: Array<{ changes: number }> }>(
    `INSERT INTO username_change_counts (user_id, day, changes) VALUES (?, (now() AT TIME ZONE 'UTC')::date, 1)
     ON CONFLICT (user_id, day) DO UPDATE SET changes = username_change_counts.changes + 1
     RETURNING changes`,
    [userId],
  );
  return result.rows[0]?.changes ?? 0;
}
