import { type AccountRecord, toAccountResponse, toEmbeddedAccountResponse } from '../accounts/account.ts';
import type { components } from '@platform/client/openapi/identity';
import type { UserRecord } from '../user-records/user.ts';

/** The User of SPEC.md part 2 with the embedded account of create and update (openapi.yaml `User`). */
export type UserResponse = components['schemas']['User'];

/** The User with the account in full, as unblock answers it (openapi.yaml `UserWithFullAccount`). */
export type UserWithFullAccountResponse = components['schemas']['UserWithFullAccount'];

function userFields(user: UserRecord): Omit<UserResponse, 'account'> {
  return {
    userId: user.id,
    username: user.username,
    firstName: user.firstName,
    ...(user.midName === null ? {} : { midName: user.midName }),
    lastName: user.lastName,
    locale: user.locale,
    timezone: user.timezone,
    roles: [...user.roles],
    status: user.status,
  };
}

/** A user with its embedded account (no `type`, no `subscriptionPlan`) when it has one. */
export function toUserResponse(user: UserRecord, account: AccountRecord | undefined): UserResponse {
  return { ...userFields(user), ...(account === undefined ? {} : { account: toEmbeddedAccountResponse(account) }) };
}

/** A user with its full account when it has one (the unblock answer). */
export function toUserWithFullAccountResponse(user: UserRecord, account: AccountRecord | undefined): UserWithFullAccountResponse {
  return { ...userFields(user), ...(account === undefined ? {} : { account: toAccountResponse(account) }) };
}
