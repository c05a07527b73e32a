import type { Knex } from '@platform/service-kit/database';
import type { AccountRecord } from '../accounts/account.ts';
import { ACCOUNT_COLUMNS } from '../accounts/accounts.repository.ts';

/** An activation code row, read under a lock. */
export interface ActivationCodeRecord {
  id: string;
  accountId: string;
  codeHmac: Buffer;
  /** E.164: where the SMS went. */
  phoneNumber: string;
  /** The account's number as stored when the code was made; null for codes older than the column (void). */
  accountPhoneNumber: string | null;
  expiresAt: Date;
  failedAttempts: number;
}

/** Voids the account's open code and stores the new one, in the caller's transaction. */
export async function replaceActivationCode(
  trx: Knex.Transaction,
  code: { accountId: string; codeHmac: Buffer; phoneNumber: string; accountPhoneNumber: string; expiresAt: Date },
): Promise<void> {
  await trx('phone_activation_codes').where({ account_id: code.accountId }).whereNull('used_at').whereNull('voided_at').update({ voided_at: trx.fn.now() });
  await trx('phone_activation_codes').insert({
    account_id: code.accountId,
    code_hmac: code.codeHmac,
    phone_number: code.phoneNumber,
    account_phone_number: code.accountPhoneNumber,
    expires_at: code.expiresAt,
  });
}

/** The account's open code, locked: concurrent attempts are judged one after the other. */
export async function lockOpenActivationCode(trx: Knex.Transaction, accountId: string): Promise<ActivationCodeRecord | undefined> {
  return (await trx('phone_activation_codes')
    .where({ account_id: accountId })
    .whereNull('used_at')
    .whereNull('voided_at')
    .forUpdate()
    .first(
      'id',
      'account_id as accountId',
      'code_hmac as codeHmac',
      'phone_number as phoneNumber',
      'account_phone_number as accountPhoneNumber',
      'expires_at as expiresAt',
      'failed_attempts as failedAttempts',
    )) as ActivationCodeRecord | undefined;
}

/** Counts a wrong code; the attempt that reaches `maxAttempts` voids the code. Returns the new count. */
export async function recordWrongCode(trx: Knex.Transaction, id: string, maxAttempts: number): Promise<number> {
  const [row] = (await trx('phone_activation_codes')
    .where({ id })
    .update({
      failed_attempts: trx.raw('failed_attempts + 1'),
      voided_at: trx.raw('CASE WHEN failed_attempts + 1 >= ? THEN now() ELSE NULL END', [maxAttempts]),
    })
    .returning('failed_attempts as failedAttempts')) as [{ failedAttempts: number }];
  return row.failedAttempts;
}

/**
 * Marks the account's phone verified and the code used, in the caller's transaction, but only while the
 * account still holds the number the code was sent to: checked and set in one UPDATE, so a concurrent
 * change of the number either commits first (then nothing matches) or waits for this one (then the
 * accounts trigger takes the mark away again). Returns the account, or undefined when the number
 * changed; the code is void then.
 */
export async function consumeActivationCode(trx: Knex.Transaction, code: ActivationCodeRecord): Promise<AccountRecord | undefined> {
  const [account] =
    code.accountPhoneNumber === null
      ? []
      : ((await trx('accounts')
          .where({ id: code.accountId, mobile_phone_number: code.accountPhoneNumber })
          .update({ mobile_phone_number_verified: true })
          .returning(ACCOUNT_COLUMNS)) as AccountRecord[]);
  await trx('phone_activation_codes')
    .where({ id: code.id })
    .update(account === undefined ? { voided_at: trx.fn.now() } : { used_at: trx.fn.now() });
  return account;
}
