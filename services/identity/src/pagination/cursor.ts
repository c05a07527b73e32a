import { BadRequestError } from '@platform/errors';

/**
 * Where a page of a keyset-ordered list ends: the exact sort time of its last row (microseconds, UTC, as
 * `exactInstant` selects it) and what breaks ties (the row's uuid, or a sequence number), as text. The
 * next page starts after it, so rows inserted meanwhile never shift a page: every row that was there when
 * the listing began is seen once.
 */
export interface Position {
  at: string;
  id: string;
}

const INSTANT = /^(\d{4})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A tie-breaker that is a row's uuid (the default). */
export const isUuid = (id: string): boolean => UUID.test(id);

/** A tie-breaker that is a positive Postgres bigint, written in plain digits. */
export const isBigint = (id: string): boolean => /^[1-9][0-9]{0,18}$/.test(id) && BigInt(id) <= 9_223_372_036_854_775_807n;

const INVALID = 'query.cursor is not a cursor of this list; start again without it';

/**
 * SQL for `column` as the text a cursor carries: UTC with all six fractional digits (a JavaScript Date
 * keeps milliseconds only, and a position rounded down would show its own row again).
 */
export function exactInstant(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}

/** True for an instant Postgres reads as written: a real calendar date, from 1970 on. */
function isInstant(text: string): boolean {
  const year = Number(INSTANT.exec(text)?.[1] ?? 0);
  const millis = `${text.slice(0, 23)}Z`;
  return year >= 1970 && !Number.isNaN(Date.parse(millis)) && new Date(millis).toISOString() === millis;
}

/** The opaque cursor of a position in the list named `list` (a cursor of one list is refused by another). */
export function encodeCursor(list: string, position: Position): string {
  return Buffer.from(JSON.stringify([list, position.at, position.id])).toString('base64url');
}

/** The position a cursor of `list` names; undefined without one; 400 for anything this service did not make. */
export function decodeCursor(list: string, cursor: string | undefined, isId: (id: string) => boolean = isUuid): Position | undefined {
  if (cursor === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  if (Array.isArray(value) && value.length === 3 && value[0] === list) {
    const [, at, id] = value as unknown[];
    if (typeof at === 'string' && typeof id === 'string' && isInstant(at) && isId(id)) return { at, id };
  }
  throw new BadRequestError(INVALID, { messages: [INVALID] });
}
