import type { Role } from '@platform/auth';
import type { components } from '@platform/client/openapi/identity';

export type UserStatus = components['schemas']['UserStatus'];

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
