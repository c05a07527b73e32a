import type { Migration } from '@platform/service-kit/database';

/** The audit types' constraint as it stands, read from the database (as the migrations before the caller left it). */
export async function auditTypes(db: Parameters<Migration['up']>[0]): Promise<string[]> {
  const { rows } = await db.raw<{ rows: Array<{ definition: string }> }>(
    "SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE conrelid = 'audit_events'::regclass AND conname = 'audit_events_type_check'",
  );
  return [...(rows[0]?.definition ?? '').matchAll(/'([a-z_.]+)'::text/g)].map((match) => match[1] as string);
}

export async function setAuditTypes(db: Parameters<Migration['up']>[0], types: readonly string[]): Promise<void> {
  await db.raw(`
    ALTER TABLE audit_events DROP CONSTRAINT audit_events_type_check;
    ALTER TABLE audit_events ADD CONSTRAINT audit_events_type_check CHECK (type IN (${types.map((type) => `'${type}'`).join(', ')}));
  `);
}
