import { BadRequestError } from '@platform/errors';

// The tz database names this runtime knows, plus the aliases Intl leaves out of its canonical list.
const TIMEZONES = new Set([...Intl.supportedValuesOf('timeZone'), 'UTC', 'Etc/UTC', 'GMT', 'Etc/GMT']);

/** The problems of user fields that a JSON schema cannot express; empty when there are none. */
export function userFieldProblems(fields: { timezone?: string; password?: string }, passwordField = 'password'): string[] {
  const problems: string[] = [];
  if (fields.timezone !== undefined && !TIMEZONES.has(fields.timezone)) {
    problems.push(`body.timezone must be a tz database name such as Europe/Istanbul, got "${fields.timezone}"`);
  }
  if (fields.password !== undefined) {
    const bytes = Buffer.byteLength(fields.password, 'utf8');
    // bcrypt reads at most 72 bytes: a longer password would silently lose its tail.
    if (bytes < 8 || bytes > 72) problems.push(`body.${passwordField} must be 8 to 72 bytes in UTF-8, got ${bytes}`);
  }
  return problems;
}

/** Throws 400 listing every problem, if there are any. */
export function assertValidUserFields(fields: { timezone?: string; password?: string }, passwordField?: string): void {
  const problems = userFieldProblems(fields, passwordField);
  if (problems.length > 0) throw new BadRequestError(problems.join('; '), { messages: problems });
}
