import assert from 'node:assert/strict';

/** What a list operation answers (CONTRACT.md part 11). */
export interface ListPage<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * Every item of a list operation, page after page by its cursor, as a client walks it: `get` sends the
 * query (`?filter=…&limit=…`, to which `&cursor=…` is added), and every page must answer 200.
 */
export async function everyPage<T>(get: (query: string) => Promise<{ status: number; body: unknown }>, query: string): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | null = null;
  do {
    const res = await get(`${query}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const page = res.body as ListPage<T>;
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return items;
}
