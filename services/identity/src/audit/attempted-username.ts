import { createHmac } from 'node:crypto';

/**
 * Shaped like an e-mail address (every username is one): a local part without spaces, controls or `@`,
 * and a domain of dot-separated labels. A string typed into the wrong field (a password) rarely is.
 */
const ADDRESS = /^[^\s@\p{C}]{1,64}@(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/u;

/** Where a refused login's username stands in its `login.failed` event: the address, or a keyed digest. */
export type AttemptedUsername = { username: string } | { usernameDigest: string };

/**
 * What the audit trail keeps of a username that matched no user (CONTRACT.md part 11: `details` never
 * holds a password): the text itself when it is shaped like an address, else only a keyed digest of it
 * (HMAC-SHA256 under `key`, 32 hex digits), so an ADMIN sees that the same string was tried again without
 * seeing a password that was typed into the username field. The key is identity's own secret: a digest
 * cannot be tested against guesses by whoever reads the trail.
 */
export function attemptedUsername(given: string, key: string): AttemptedUsername {
  if (ADDRESS.test(given)) return { username: given };
  const usernameDigest = createHmac('sha256', key).update('login.failed username\0').update(given).digest('hex').slice(0, 32);
  return { usernameDigest };
}
