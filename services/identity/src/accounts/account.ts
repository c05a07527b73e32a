export const ACCOUNT_TYPES = ['INDIVIDUAL', 'ORGANIZATION'] as const;
export type AccountType = (typeof ACCOUNT_TYPES)[number];
export const SUBSCRIPTION_PLANS = ['NONE', 'TRIAL', 'BASIC_MONTHLY', 'BASIC_YEARLY', 'PREMIUM_MONTHLY', 'PREMIUM_YEARLY', 'CUSTOM'] as const;
export type SubscriptionPlan = (typeof SUBSCRIPTION_PLANS)[number];

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

/** The Account of SPEC.md part 2, as answered by the account operations and by unblock. */
export interface AccountResponse {
  id: string;
  userId: string;
  type: AccountType;
  subscriptionPlan: SubscriptionPlan;
  mobilePhoneNumber?: string;
  location?: string;
  company?: string;
  industry?: string;
  profilePictureUrl?: string;
  emailVerified: boolean;
  mobilePhoneNumberVerified: boolean;
  createdAt: string;
  updatedAt: string;
}

/** The account embedded in a user answer of create and update: without `type` and `subscriptionPlan`. */
export type EmbeddedAccountResponse = Omit<AccountResponse, 'type' | 'subscriptionPlan'>;

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
