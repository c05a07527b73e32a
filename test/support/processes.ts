import { databaseUrl, untilOk } from '@platform/stack';
import { TEST_POSTGRES_URL } from '@platform/service-kit/testing';

export { freePort } from '@platform/stack';

/** The URL of database `name` on the test Postgres server. */
export function testDatabaseUrl(name: string): string {
  return databaseUrl(TEST_POSTGRES_URL, name);
}

/** Polls `url` until it answers 200 (true) or the deadline passes (false). */
export function waitUntilOk(url: string, deadline: number): Promise<boolean> {
  return untilOk(url, deadline);
}
