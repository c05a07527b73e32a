import type { Principal } from '@platform/auth';
import { BadRequestError, NotFoundError } from '@platform/errors';
import { type Knex, deadlineTransaction } from '@platform/service-kit/database';
import { assertMayUseAccountOf } from '../accounts/account-access.ts';
import { findAccountById, lockAccountById } from '../accounts/accounts.repository.ts';
import { canonicalUuid } from '../request/canonical-uuid.ts';
import type { AuditContext } from '../request/audit-context.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';
import type { components } from '@platform/client/openapi/identity';
import type { SmsSender } from '../notifications/sms-sender.ts';
import { assertAllowedLink } from '../request/link-allowlist.ts';
import { activationCodeHmac, newActivationCode } from './activation-code.ts';
import { replaceActivationCode } from './phone-activation.repository.ts';
import { toE164 } from './phone-number.ts';
import type { SmsLimits } from './sms-limits.ts';

export interface PhoneActivationDeps {
  db: Knex;
  sms: SmsSender;
  limits: SmsLimits;
  codeKey: string;
  codeTtlS: number;
  defaultRegion: string;
  /** Origins the activation page link in the SMS may point at: our SMS must not carry a stranger's link. */
  allowedLinkOrigins: ReadonlySet<string>;
}

function badRequest(message: string): BadRequestError {
  return new BadRequestError(message, { messages: [message] });
}

/**
 * POST /v1/accounts/phone-number-activation-request: a new code replaces any older one and goes out by
 * SMS. A provider failure still answers 200 (`smsSent: false`); the code stays valid and the limits are
 * given back so the client can ask again at once.
 */
export async function requestPhoneActivation(
  deps: PhoneActivationDeps,
  principal: Principal,
  audit: AuditContext,
  input: components['schemas']['PhoneActivationRequestBody'],
): Promise<components['schemas']['PhoneActivationTicket']> {
  const account = await findAccountById(deps.db, canonicalUuid(input.accountId));
  if (account === undefined) throw new NotFoundError('Account not found');
  assertMayUseAccountOf(principal, account.userId);
  if (account.userId !== canonicalUuid(input.userId)) throw new NotFoundError('Account not found');
  const page = assertAllowedLink(input.phoneNumberActivationPageLink, deps.allowedLinkOrigins, 'phoneNumberActivationPageLink');
  const accountPhoneNumber = account.mobilePhoneNumber;
  if (accountPhoneNumber === null) throw badRequest('The account has no mobilePhoneNumber to activate');
  const phoneNumber = toE164(accountPhoneNumber, deps.defaultRegion);
  if (phoneNumber === undefined) throw badRequest('The account\'s mobilePhoneNumber is not a valid mobile number');

  await deps.limits.claim(account.id, phoneNumber);
  const code = newActivationCode();
  const expiresAt = new Date(Date.now() + deps.codeTtlS * 1000);
  try {
    await deadlineTransaction(deps.db, async (trx) => {
      // The account before the codes, in the order a change of the number takes them (its trigger voids
      // the open code): the other order deadlocks with it. Should the number have changed since it was
      // read above, the code keeps the number it goes to, and activation finds that the account no longer
      // holds it.
      await lockAccountById(trx, account.id);
      await replaceActivationCode(trx, {
        accountId: account.id,
        codeHmac: activationCodeHmac(deps.codeKey, account.id, code),
        phoneNumber,
        accountPhoneNumber,
        expiresAt,
      });
      // Recorded with the code it is about; whether the provider then took the SMS is the answer's `smsSent`.
      await insertAuditEvent(trx, audit, { type: 'phone.code_sent', subjectUserId: account.userId, details: { accountId: account.id, recipientPhoneNumber: phoneNumber } });
    });
  } catch (err) {
    await deps.limits.release(account.id, phoneNumber);
    throw err;
  }
  const smsSent = await deps.sms.send({
    to: phoneNumber,
    message: `Your verification code is ${code}. It expires in ${Math.round(deps.codeTtlS / 60)} minutes. Enter it at ${page.toString()}`,
  });
  if (!smsSent) await deps.limits.release(account.id, phoneNumber);
  return {
    userId: account.userId,
    accountId: account.id,
    recipientPhoneNumber: phoneNumber,
    tokenExpirationEpoch: Math.floor(expiresAt.getTime() / 1000),
    smsSent,
  };
}
