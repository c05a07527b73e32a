import type { Knex } from '@platform/service-kit/database';
import { type Position, exactInstant } from '../pagination/cursor.ts';
import type { AuditEventType, NewAuditEvent } from './audit-event.ts';
import type { AuditContext } from '../request/audit-context.ts';

/** A stored event, with the position a page after it starts from. */
export interface AuditEventRecord {
  id: string;
  type: AuditEventType;
  at: Date;
  actorUserId: string | null;
  subjectUserId: string | null;
  clientKeyId: string | null;
  sourceAddress: string | null;
  requestId: string | null;
  details: Record<string, unknown>;
  position: Position;
}

/**
 * `details` as jsonb takes it. Some of it is text as a request sent it (the username of a failed login), and
 * JavaScript text may hold a lone surrogate, which JSON.stringify writes as `\ud800` and Postgres refuses:
 * such a character becomes U+FFFD, as it does anywhere else the service stores text.
 */
function jsonbText(details: Record<string, unknown>): string {
  return JSON.stringify(details, (_key, value: unknown) => (typeof value === 'string' ? value.toWellFormed() : value));
}

/**
 * Records events in the caller's transaction (or alone, for a change that is one statement's only
 * consequence): when the transaction rolls back, so do its events, and a failed insert rolls back the change.
 */
export async function insertAuditEvents(db: Knex, context: AuditContext, events: readonly NewAuditEvent[]): Promise<void> {
  if (events.length === 0) return;
  await db('audit_events').insert(
    events.map((event) => ({
      type: event.type,
      actor_user_id: context.actorUserId,
      subject_user_id: event.subjectUserId,
      client_key_id: context.clientKeyId,
      source_address: context.sourceAddress,
      request_id: context.requestId,
      details: jsonbText(event.details ?? {}),
    })),
  );
}

/** `insertAuditEvents` for one event. */
export async function insertAuditEvent(db: Knex, context: AuditContext, event: NewAuditEvent): Promise<void> {
  await insertAuditEvents(db, context, [event]);
}

/** The filters of GET /v1/audit/events; `since` inclusive, `until` exclusive. */
export interface AuditFilter {
  subjectUserId?: string;
  actorUserId?: string;
  type?: AuditEventType;
  since?: Date;
  until?: Date;
}

/** Up to `limit` events matching the filter, newest first (in insertion order within a microsecond), after `after` when given. */
export async function findAuditEvents(db: Knex, filter: AuditFilter, limit: number, after: Position | undefined): Promise<AuditEventRecord[]> {
  const query = db('audit_events')
    .select(
      'id',
      'type',
      'at',
      'actor_user_id as actorUserId',
      'subject_user_id as subjectUserId',
      'client_key_id as clientKeyId',
      'source_address as sourceAddress',
      'request_id as requestId',
      'details',
      db.raw(`${exactInstant('at')} AS "positionAt"`),
      db.raw('seq::text AS "positionSeq"'),
    )
    .orderBy([
      { column: 'at', order: 'desc' },
      { column: 'seq', order: 'desc' },
    ])
    .limit(limit);
  if (filter.subjectUserId !== undefined) query.where('subject_user_id', filter.subjectUserId);
  if (filter.actorUserId !== undefined) query.where('actor_user_id', filter.actorUserId);
  if (filter.type !== undefined) query.where('type', filter.type);
  if (filter.since !== undefined) query.where('at', '>=', filter.since);
  if (filter.until !== undefined) query.where('at', '<', filter.until);
  if (after !== undefined) query.whereRaw('(at, seq) < (?::timestamptz, ?::bigint)', [after.at, after.id]);
  const rows = (await query) as Array<Omit<AuditEventRecord, 'position'> & { positionAt: string; positionSeq: string }>;
  return rows.map(({ positionAt, positionSeq, ...row }) => ({ ...row, position: { at: positionAt, id: positionSeq } }));
}

/**
 * Deletes up to `batchSize` events older than `before`; returns how many. Rows another replica is deleting
 * right now are skipped rather than waited for.
 */
export async function deleteAuditEventsBefore(db: Knex, before: Date, batchSize: number): Promise<number> {
  const result = await db.raw<{ rowCount: number }>(
    `DELETE FROM audit_events WHERE id IN (
       SELECT id FROM audit_events WHERE at < ? ORDER BY at LIMIT ? FOR UPDATE SKIP LOCKED
     )`,
    [before, batchSize],
  );
  return result.rowCount;
}
