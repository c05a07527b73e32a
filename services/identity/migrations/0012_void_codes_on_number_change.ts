import type { Migration } from '@platform/service-kit/database';

/**
 * A code verifies only the number it was sent to: once `mobile_phone_number` changes, the account's open
 * activation code is void (CONTRACT.md part 6), even if the number later changes back. Comparing the
 * number at activation (0007) could not see A → B → A; this trigger voids the code at the first change,
 * in the transaction of the change, whichever path makes it.
 *
 * The trigger locks the code rows after the account row (the UPDATE holds it). Activation and code
 * requests lock the account first and the codes after, in the same order, so they never deadlock with it.
 *
 * Codes open at the migration are voided: whether their number changed and changed back before it can no
 * longer be told, and a code lives minutes (the owner asks for a new one).
 */
export const voidCodesOnNumberChange: Migration = {
  name: '0012_void_codes_on_number_change',
  up: async (db) => {
    await db.raw(`
      CREATE FUNCTION void_phone_activation_codes() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE phone_activation_codes SET voided_at = now()
         WHERE account_id = NEW.id AND used_at IS NULL AND voided_at IS NULL;
        RETURN NULL;
      END $$;
      CREATE TRIGGER accounts_phone_codes_void AFTER UPDATE OF mobile_phone_number ON accounts
        FOR EACH ROW WHEN (NEW.mobile_phone_number IS DISTINCT FROM OLD.mobile_phone_number)
        EXECUTE FUNCTION void_phone_activation_codes();

      UPDATE phone_activation_codes SET voided_at = now() WHERE used_at IS NULL AND voided_at IS NULL;
    `);
  },
  down: async (db) => {
    await db.raw(`
      DROP TRIGGER IF EXISTS accounts_phone_codes_void ON accounts;
      DROP FUNCTION IF EXISTS void_phone_activation_codes();
    `);
  },
};
