import type { Knex } from '@platform/service-kit/database';
import type { AccountRecord } from './account.ts';

/** Columns of `accounts` under the names of `AccountRecord`. */
export const ACCOUNT_COLUMNS = [
  'id',
  'user_id as userId',
  'type',
  'subscription_plan as subscriptionPlan',
  'mobile_phone_number as mobilePhoneNumber',
  'location',
  'company',
  'industry',
  'profile_picture_url as profilePictureUrl',
  'email_verified as emailVerified',
  'mobile_phone_number_verified as mobilePhoneNumberVerified',
  'created_at as createdAt',
  'updated_at as updatedAt',
];

/** The account of a user, if the user has one. */
export async function findAccountByUserId(db: Knex, userId: string): Promise<AccountRecord | undefined> {
  return (await db('accounts').where({ user_id: userId }).first(ACCOUNT_COLUMNS)) as AccountRecord | undefined;
}

/** The accounts of these users, by user id (users without one are absent). */
export async function findAccountsByUserIds(db: Knex, userIds: readonly string[]): Promise<Map<string, AccountRecord>> {
  if (userIds.length === 0) return new Map();
  const rows = (await db('accounts').whereIn('user_id', userIds).select(ACCOUNT_COLUMNS)) as AccountRecord[];
  return new Map(rows.map((account) => [account.userId, account]));
}

/** The account with that id. */
export async function findAccountById(db: Knex, id: string): Promise<AccountRecord | undefined> {
  return (await db('accounts').where({ id }).first(ACCOUNT_COLUMNS)) as AccountRecord | undefined;
}

/** The account with that id, locked until the transaction ends. */
export async function lockAccountById(trx: Knex.Transaction, id: string): Promise<AccountRecord | undefined> {
  return (await trx('accounts').where({ id }).forUpdate().first(ACCOUNT_COLUMNS)) as AccountRecord | undefined;
}

/** The editable columns of an account, under their API names. */
export interface AccountFields {
  type?: string;
  subscriptionPlan?: string;
  mobilePhoneNumber?: string;
  location?: string;
  company?: string;
  industry?: string;
  profilePictureUrl?: string;
}

function accountRow(fields: AccountFields): Record<string, unknown> {
  const row: Record<string, unknown> = {
    type: fields.type,
    subscription_plan: fields.subscriptionPlan,
    mobile_phone_number: fields.mobilePhoneNumber,
    location: fields.location,
    company: fields.company,
    industry: fields.industry,
    profile_picture_url: fields.profilePictureUrl,
  };
  return Object.fromEntries(Object.entries(row).filter(([, value]) => value !== undefined));
}

/** Inserts the user's account unless it has one already (the unique user_id decides); undefined then. */
export async function insertAccountIfAbsent(db: Knex, userId: string, fields: AccountFields): Promise<AccountRecord | undefined> {
  const rows = (await db('accounts')
    .insert({ user_id: userId, ...accountRow(fields) })
    .onConflict('user_id')
    .ignore()
    .returning(ACCOUNT_COLUMNS)) as AccountRecord[];
  return rows[0];
}

/** Applies the present fields; `updated_at` and the phone verification reset are the database's triggers. */
export async function updateAccountRow(db: Knex, id: string, fields: AccountFields): Promise<AccountRecord | undefined> {
  const row = accountRow(fields);
  if (Object.keys(row).length === 0) return findAccountById(db, id);
  const rows = (await db('accounts').where({ id }).update(row).returning(ACCOUNT_COLUMNS)) as AccountRecord[];
  return rows[0];
}
