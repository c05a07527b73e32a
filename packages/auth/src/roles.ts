/** The roles of SPEC.md part 2, in the order SPEC.md lists them. */
export const ROLES = ['GUEST', 'API_USER', 'STANDARD_USER', 'POWER_USER', 'EXTENDED_USER', 'ADMIN'] as const;
export type Role = (typeof ROLES)[number];

/** True for a string that names one of the roles. */
export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}
