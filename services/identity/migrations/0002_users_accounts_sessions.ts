import type { Migration } from '@platform/service-kit/database';

// Enumerations are CHECK constraints rather than Postgres enums: adding a value later is one
// constraint swap instead of an ALTER TYPE that cannot run inside a transaction.
const ROLES = `'GUEST','API_USER','STANDARD_USER','POWER_USER','EXTENDED_USER','ADMIN'`;
const STATUSES = `'INACTIVE','ACTIVE','EXPIRED','BLOCKED','DELETED'`;
const ACCOUNT_TYPES = `'INDIVIDUAL','ORGANIZATION'`;
const PLANS = `'NONE','TRIAL','BASIC_MONTHLY','BASIC_YEARLY','PREMIUM_MONTHLY','PREMIUM_YEARLY','CUSTOM'`;

/**
 * Users, their one account, login sessions and refresh tokens. Every rule that data must obey is
 * a constraint here, so no code path (or hand-written SQL) can store a row the API would refuse.
 */
export const usersAccountsSessions: Migration = {
  name: '0002_users_accounts_sessions',
  up: async (db) => {
    await db.raw(`
      CREATE FUNCTION set_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.updated_at := now();
        RETURN NEW;
      END $$;

      CREATE TABLE users (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        username citext NOT NULL UNIQUE CHECK (length(username) BETWEEN 3 AND 255 AND username LIKE '%_@_%'),
        password_hash text CHECK (password_hash ~ '^\\$2[aby]\\$[0-9]{2}\\$[./A-Za-z0-9]{53}$'),
        first_name text NOT NULL CHECK (length(first_name) BETWEEN 1 AND 255),
        mid_name text CHECK (length(mid_name) BETWEEN 1 AND 255),
        last_name text NOT NULL CHECK (length(last_name) BETWEEN 1 AND 255),
        locale text NOT NULL CHECK (locale ~ '^[a-z]{2,3}_[A-Z]{2}$'),
        timezone text NOT NULL CHECK (length(timezone) BETWEEN 1 AND 64),
        roles text[] NOT NULL CHECK (cardinality(roles) >= 1 AND roles <@ ARRAY[${ROLES}]::text[]),
        status text NOT NULL CHECK (status IN (${STATUSES})),
        failed_login_count integer NOT NULL DEFAULT 0 CHECK (failed_login_count >= 0),
        last_login_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TRIGGER users_updated_at BEFORE UPDATE ON users FOR EACH ROW EXECUTE FUNCTION set_updated_at();

      CREATE TABLE accounts (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        user_id uuid NOT NULL UNIQUE REFERENCES users (id) ON DELETE CASCADE,
        type text NOT NULL CHECK (type IN (${ACCOUNT_TYPES})),
        subscription_plan text NOT NULL DEFAULT 'NONE' CHECK (subscription_plan IN (${PLANS})),
        mobile_phone_number text CHECK (length(mobile_phone_number) BETWEEN 1 AND 32),
        location text CHECK (length(location) BETWEEN 1 AND 255),
        company text CHECK (length(company) BETWEEN 1 AND 255),
        industry text CHECK (length(industry) BETWEEN 1 AND 255),
        profile_picture_url text CHECK (length(profile_picture_url) BETWEEN 1 AND 2048),
        email_verified boolean NOT NULL DEFAULT false,
        mobile_phone_number_verified boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TRIGGER accounts_updated_at BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION set_updated_at();

      -- A verified number stays verified only while it is the same number (CONTRACT.md part 6).
      CREATE FUNCTION reset_phone_verification() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.mobile_phone_number IS DISTINCT FROM OLD.mobile_phone_number THEN
          NEW.mobile_phone_number_verified := false;
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER accounts_phone_verification BEFORE UPDATE OF mobile_phone_number ON accounts
        FOR EACH ROW EXECUTE FUNCTION reset_phone_verification();

      CREATE TABLE sessions (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz,
        revoked_reason text CHECK (revoked_reason IN ('logout', 'refresh-token-reuse', 'user-changed', 'password-reset')),
        CHECK ((revoked_at IS NULL) = (revoked_reason IS NULL))
      );
      CREATE INDEX sessions_live_by_user ON sessions (user_id) WHERE revoked_at IS NULL;

      -- Only the SHA-256 of a refresh token is kept: the token has 256 random bits, so a fast hash
      -- is enough and a stolen table yields nothing usable.
      CREATE TABLE refresh_tokens (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        token_hash bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
        parent_id uuid UNIQUE REFERENCES refresh_tokens (id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        used_at timestamptz,
        revoked_at timestamptz,
        CHECK (expires_at > created_at)
      );
      CREATE INDEX refresh_tokens_by_session ON refresh_tokens (session_id);
    `);
  },
  down: async (db) => {
    await db.raw(`
      DROP TABLE IF EXISTS refresh_tokens, sessions, accounts, users;
      DROP FUNCTION IF EXISTS reset_phone_verification(), set_updated_at();
    `);
  },
};
