import type { Role } from '@platform/auth';

export const USER_STATUSES = ['INACTIVE', 'ACTIVE', 'EXPIRED', 'BLOCKED', 'DELETED'] as const;
export type UserStatus = (typeof USER_STATUSES)[number];

/** A user as stored. `passwordHash` never leaves the service. */
export interface UserRecord {
  id: string;
  username: string;
  passwordHash: string | null;
  firstName: string;
  midName: string | null;
  lastName: string;
  locale: string;
  timezone: string;
  roles: Role[];
  status: UserStatus;
  failedLoginCount: number;
}
