import { dictionary } from '@zxcvbn-ts/language-common';
import { BadRequestError } from '@platform/errors';

/** The 400 message of a password that is too easy to guess (CONTRACT.md part 4). */
export const PASSWORD_TOO_COMMON = 'Password is too common';

/** How many of the most common passwords are refused. */
const REFUSED_COMMON_PASSWORDS = 10_000;

// zxcvbn-ts keeps its list ordered by rank (most common first), taken from real password leaks and
// maintained upstream; we take its head rather than keep a list of our own. Lower case, as the list is.
const COMMON = new Set(dictionary['passwords-common'].slice(0, REFUSED_COMMON_PASSWORDS).map((password) => password.toLowerCase()));

/**
 * True when the password is among the most common ones or equals (ignoring case) one of the
 * usernames given or its local part: the first things a guesser tries.
 */
export function isTooCommonPassword(password: string, usernames: ReadonlyArray<string | undefined>): boolean {
  const folded = password.toLowerCase();
  if (COMMON.has(folded)) return true;
  return usernames.some((username) => {
    if (username === undefined) return false;
    const name = username.toLowerCase();
    const at = name.lastIndexOf('@');
    return folded === name || (at > 0 && folded === name.slice(0, at));
  });
}

/** Throws 400 `Password is too common` when `isTooCommonPassword` says so. */
export function assertUncommonPassword(password: string, usernames: ReadonlyArray<string | undefined> = []): void {
  if (isTooCommonPassword(password, usernames)) throw new BadRequestError(PASSWORD_TOO_COMMON, { messages: [PASSWORD_TOO_COMMON] });
}
