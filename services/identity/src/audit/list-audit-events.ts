import { BadRequestError } from '@platform/errors';
import { parseRfc3339DateTime } from '@platform/service-kit';
import type { Knex } from '@platform/service-kit/database';
import { canonicalUuid } from '../request/canonical-uuid.ts';
import type { operations } from '@platform/client/openapi/identity';
import { decodeCursor, isBigint } from '../pagination/cursor.ts';
import { type Page, type RawQuery, limitOf, pageOf } from '../pagination/page.ts';
import type { AuditEventResponse, AuditEventType } from './audit-event.ts';
import { type AuditEventRecord, findAuditEvents } from './audit.repository.ts';

export type AuditEventsQuery = RawQuery<NonNullable<operations['listAuditEvents']['parameters']['query']>>;

// Postgres keeps timestamps from 4713 BC on but refuses year 0, which RFC 3339 allows: bounds outside the
// years any event can have are moved to them, which selects the same events.
const EARLIEST = new Date('1970-01-01T00:00:00.000Z');
const LATEST = new Date('9999-12-31T23:59:59.999Z');

function instant(raw: string | undefined, name: string): Date | undefined {
  if (raw === undefined) return undefined;
  let time: number;
  try {
    // Strictly: Date.parse rolls 02-30 into March and T24:00 into the next day, and the validator's date-time
    // format lets both through (and a leap second, 23:59:60, which JavaScript time has not).
    time = parseRfc3339DateTime(raw);
  } catch (err) {
    const message = `query.${name} must be a date-time such as 2025-06-01T10:15:30Z, got "${raw.slice(0, 40)}": ${(err as Error).message}`;
    throw new BadRequestError(message, { messages: [message] });
  }
  return new Date(Math.min(Math.max(time, EARLIEST.getTime()), LATEST.getTime()));
}

function toResponse(event: AuditEventRecord): AuditEventResponse {
  return {
    id: event.id,
    type: event.type,
    at: event.at.toISOString(),
    actorUserId: event.actorUserId,
    subjectUserId: event.subjectUserId,
    clientKeyId: event.clientKeyId,
    sourceAddress: event.sourceAddress,
    requestId: event.requestId,
    details: event.details,
  };
}

/** GET /v1/audit/events (the caller is an ADMIN): the events matching every filter given, newest first. */
export async function listAuditEvents(db: Knex, query: AuditEventsQuery): Promise<Page<AuditEventResponse>> {
  const after = decodeCursor('audit-events', query.cursor, isBigint);
  const since = instant(query.since, 'since');
  const until = instant(query.until, 'until');
  if (since !== undefined && until !== undefined && since > until) {
    const message = 'query.since must not be later than query.until';
    throw new BadRequestError(message, { messages: [message] });
  }
  const limit = limitOf(query.limit);
  const rows = await findAuditEvents(
    db,
    {
      subjectUserId: query.subjectUserId === undefined ? undefined : canonicalUuid(query.subjectUserId),
      actorUserId: query.actorUserId === undefined ? undefined : canonicalUuid(query.actorUserId),
      type: query.type as AuditEventType | undefined,
      since,
      until,
    },
    limit + 1,
    after,
  );
  return pageOf('audit-events', rows, limit, toResponse);
}
