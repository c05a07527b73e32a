import type { Migration } from '@platform/service-kit/database';

/**
 * The account's phone number as stored (as the user typed it) when the code was made, beside the E.164
 * number the SMS went to: activation marks the account verified only while it still holds exactly that
 * number, in one statement (CONTRACT.md part 6). Codes made before this column exist are void.
 */
export const activationCodeAccountNumber: Migration = {
  name: '0007_activation_code_account_number',
  up: async (db) => {
    await db.raw('ALTER TABLE phone_activation_codes ADD COLUMN account_phone_number text CHECK (length(account_phone_number) BETWEEN 1 AND 32)');
  },
  down: async (db) => {
    await db.raw('ALTER TABLE phone_activation_codes DROP COLUMN account_phone_number');
  },
};
