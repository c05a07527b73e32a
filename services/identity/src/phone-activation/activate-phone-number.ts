import type { Principal } from '@platform/auth';
import { BadRequestError, NotFoundError } from '@platform/errors';
import { type Knex, deadlineTransaction } from '@platform/service-kit/database';
import { type AccountRecord, type AccountResponse, toAccountResponse } from '../accounts/account.ts';
import { mayUseAccountOf } from '../accounts/account-access.ts';
import { findAccountById, lockAccountById } from '../accounts/accounts.repository.ts';
import { canonicalUuid } from '../request/canonical-uuid.ts';
import type { AuditContext } from '../request/audit-context.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';
import type { components } from '@platform/client/openapi/identity';
import { activationCodeHmac, sameHmac } from './activation-code.ts';
import { consumeActivationCode, lockOpenActivationCode, recordWrongCode } from './phone-activation.repository.ts';

/** Wrong codes a code survives; the 5th wrong one voids it (CONTRACT.md part 6). */
export const MAX_WRONG_CODES = 5;

function refused(message: string): BadRequestError {
  return new BadRequestError(message, { messages: [message] });
}

/**
 * POST /v1/accounts/phone-number-activation: a right, live code sets `mobilePhoneNumberVerified` while the
 * account holds the number the code was sent to, whatever else runs at the same time. The code row is
 * locked while judged, so a code works once and N concurrent wrong guesses count N.
 *
 * The account row is locked before the code: a change of the number locks the account and then (its
 * trigger) voids the codes, and taking the two in the same order means neither waits for the other while
 * holding what the other needs (a deadlock, a 500). Once the lock is held, the number cannot change until
 * the code is judged, and any change before it has voided the code already (migration 0012).
 */
export async function activatePhoneNumber(
  deps: { db: Knex; codeKey: string },
  principal: Principal,
  audit: AuditContext,
  input: components['schemas']['PhoneActivationBody'],
): Promise<AccountResponse> {
  const account = await findAccountById(deps.db, canonicalUuid(input.accountId));
  if (account === undefined || !mayUseAccountOf(principal, account.userId)) throw new NotFoundError('Account not found');

  const outcome = await deadlineTransaction(deps.db, async (trx): Promise<{ ok: false; refused: string } | { ok: true; activated: AccountRecord }> => {
    await lockAccountById(trx, account.id);
    const code = await lockOpenActivationCode(trx, account.id);
    if (code === undefined) return { ok: false, refused: 'No activation code is pending; request a new one' };
    if (code.expiresAt.getTime() <= Date.now()) return { ok: false, refused: 'The activation code has expired; request a new one' };
    if (!sameHmac(code.codeHmac, activationCodeHmac(deps.codeKey, account.id, input.code))) {
      const attempts = await recordWrongCode(trx, code.id, MAX_WRONG_CODES);
      return { ok: false, refused: attempts >= MAX_WRONG_CODES ? 'The activation code is wrong and now void; request a new one' : 'The activation code is wrong' };
    }
    // The account is not read here: the number is compared in the very UPDATE that sets the mark.
    const activated = await consumeActivationCode(trx, code);
    // The number changed after the code went out: the code proves nothing about the new one.
    if (activated === undefined) return { ok: false, refused: 'The phone number changed since the code was sent; request a new one' };
    const details = { accountId: activated.id, phoneNumber: code.phoneNumber };
    await insertAuditEvent(trx, audit, { type: 'phone.verified', subjectUserId: activated.userId, details });
    return { ok: true, activated };
  });
  if (!outcome.ok) throw refused(outcome.refused);
  return toAccountResponse(outcome.activated);
}
