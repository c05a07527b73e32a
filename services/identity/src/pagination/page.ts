import { type Position, encodeCursor } from './cursor.ts';

/** CONTRACT.md part 11: a list answer. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * A page from up to `limit + 1` rows in list order: the extra row only tells that there is more, and the
 * cursor points after the last row shown.
 */
export function pageOf<R extends { position: Position }, T>(list: string, rows: readonly R[], limit: number, toItem: (row: R) => T): Page<T> {
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  return { items: shown.map(toItem), nextCursor: rows.length > limit && last !== undefined ? encodeCursor(list, last.position) : null };
}

/** CONTRACT.md part 11: 50 unless asked; the validator has checked a given one to be an integer of 1–200. */
export const DEFAULT_LIMIT = 50;

/** The `limit` of a query as the router hands it over (text, or absent). */
export function limitOf(raw: unknown): number {
  return raw === undefined ? DEFAULT_LIMIT : Number(raw);
}

/** A list operation's query as Express hands it over: every value text (openapi.yaml says which are numbers). */
export type RawQuery<Q> = { [K in keyof Q]?: string };
