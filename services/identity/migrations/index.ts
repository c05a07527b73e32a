import type { Migration } from '@platform/service-kit/database';
import { extensions } from './0001_extensions.ts';
import { usersAccountsSessions } from './0002_users_accounts_sessions.ts';
import { passwordResetTokens } from './0003_password_reset_tokens.ts';
import { phoneActivationCodes } from './0004_phone_activation_codes.ts';
import { sessionEndReasons } from './0005_session_end_reasons.ts';
import { usernameChangeCounts } from './0006_username_change_counts.ts';
import { activationCodeAccountNumber } from './0007_activation_code_account_number.ts';
import { auditEvents } from './0008_audit_events.ts';
import { sessionOrigin } from './0009_session_origin.ts';
import { userSearchIndexes } from './0010_user_search_indexes.ts';
import { revokedSessionsIndex } from './0011_revoked_sessions_index.ts';
import { voidCodesOnNumberChange } from './0012_void_codes_on_number_change.ts';
import { textWithoutControls } from './0013_text_without_controls.ts';
import { secondFactors } from './0014_second_factors.ts';
import { revokedTokens } from './0015_revoked_tokens.ts';
import { accessTokens } from './0016_access_tokens.ts';

/** Every migration of the identity database, oldest first. Append; never edit one that has shipped. */
export const migrations: readonly Migration[] = [
  extensions,
  usersAccountsSessions,
  passwordResetTokens,
  phoneActivationCodes,
  sessionEndReasons,
  usernameChangeCounts,
  activationCodeAccountNumber,
  auditEvents,
  sessionOrigin,
  userSearchIndexes,
  revokedSessionsIndex,
  voidCodesOnNumberChange,
  textWithoutControls,
  secondFactors,
  revokedTokens,
  accessTokens,
];
