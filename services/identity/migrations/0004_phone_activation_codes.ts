import type { Migration } from '@platform/service-kit/database';

/**
 * Phone activation codes (CONTRACT.md part 6). Only an HMAC of the 6-digit code is kept: a plain hash of a
 * million possible values is reversed in milliseconds, a keyed one is not without the key.
 */
export const phoneActivationCodes: Migration = {
  name: '0004_phone_activation_codes',
  up: async (db) => {
    await db.raw(`
      CREATE TABLE phone_activation_codes (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
        code_hmac bytea NOT NULL CHECK (length(code_hmac) = 32),
        phone_number text NOT NULL CHECK (phone_number ~ '^\\+[1-9][0-9]{6,14}$'),
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        failed_attempts integer NOT NULL DEFAULT 0 CHECK (failed_attempts BETWEEN 0 AND 5),
        used_at timestamptz,
        voided_at timestamptz,
        CHECK (expires_at > created_at),
        CHECK (used_at IS NULL OR voided_at IS NULL)
      );
      -- One usable code per account: a new request voids the older one.
      CREATE UNIQUE INDEX phone_activation_codes_one_open_per_account ON phone_activation_codes (account_id)
        WHERE used_at IS NULL AND voided_at IS NULL;
    `);
  },
  down: async (db) => {
    await db.raw('DROP TABLE IF EXISTS phone_activation_codes');
  },
};
