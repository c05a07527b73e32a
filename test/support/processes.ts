import { TEST_POSTGRES_URL } from '@platform/service-kit/testing';

export { freePort } from '@platform/service-kit/testing';

/** The URL of database `name` on the test Postgres server. */
export function testDatabaseUrl(name: string): string {
  const url = new URL(TEST_POSTGRES_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Polls `url` until it answers 200 (true) or the deadline passes (false). */
export async function waitUntilOk(url: string, deadline: number): Promise<boolean> {
  while (Date.now() < deadline) {
    const status = await fetch(url).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return true;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return false;
}
