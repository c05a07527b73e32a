import type { components } from '@platform/client/openapi/identity';

export type AccountType = components['schemas']['AccountType'];
export type SubscriptionPlan = components['schemas']['SubscriptionPlan'];

/** An account as stored. */
export interface AccountRecord {
  id: string;
  userId: string;
  type: AccountType;
  subscriptionPlan: SubscriptionPlan;
  mobilePhoneNumber: string | null;
  location: string | null;
  company: string | null;
  industry: string | null;
  profilePictureUrl: string | null;
  emailVerified: boolean;
  mobilePhoneNumberVerified: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/** The Account of SPEC.md part 2, as answered by the account operations and by unblock (openapi.yaml `Account`). */
export type AccountResponse = components['schemas']['Account'];

/** The account embedded in a user answer of create and update: without `type` and `subscriptionPlan`. */
export type EmbeddedAccountResponse = components['schemas']['EmbeddedAccount'];

/** Stored account → the wire shape; absent optional fields are left out rather than sent as null. */
export function toAccountResponse(account: AccountRecord): AccountResponse {
  const optional = {
    mobilePhoneNumber: account.mobilePhoneNumber,
    location: account.location,
    company: account.company,
    industry: account.industry,
    profilePictureUrl: account.profilePictureUrl,
  };
  return {
    id: account.id,
    userId: account.userId,
    type: account.type,
    subscriptionPlan: account.subscriptionPlan,
    ...Object.fromEntries(Object.entries(optional).filter(([, value]) => value !== null)),
    emailVerified: account.emailVerified,
    mobilePhoneNumberVerified: account.mobilePhoneNumberVerified,
    createdAt: account.createdAt.toISOString(),
    updatedAt: account.updatedAt.toISOString(),
  };
}

/** The embedded form of an account. */
export function toEmbeddedAccountResponse(account: AccountRecord): EmbeddedAccountResponse {
  const { type: _type, subscriptionPlan: _plan, ...embedded } = toAccountResponse(account);
  return embedded;
}
