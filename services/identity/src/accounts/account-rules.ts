import { type Principal, hasAnyRole } from '@platform/auth';
import { BadRequestError, ForbiddenError } from '@platform/errors';

/** Plans an account owner may choose for itself at create; the others are sold, so an ADMIN sets them. */
const SELF_SERVICE_PLANS: ReadonlySet<string> = new Set(['NONE', 'TRIAL']);

/** Throws 403 unless the caller is an ADMIN or the plan is NONE or TRIAL (absent means NONE). */
export function assertMayChoosePlan(principal: Principal, plan: string | undefined): void {
  if (plan === undefined || SELF_SERVICE_PLANS.has(plan) || hasAnyRole(principal, ['ADMIN'])) return;
  throw new ForbiddenError('Only an ADMIN may choose a subscription plan other than NONE or TRIAL');
}

/**
 * Throws 400 unless the profile picture link is an absolute http: or https: URL. Clients render it as an
 * image or a link: `javascript:`, `data:` or `file:` would run or read something in the viewer's context.
 */
export function assertPictureUrl(link: string | undefined): void {
  if (link === undefined) return;
  let protocol: string | undefined;
  try {
    protocol = new URL(link).protocol;
  } catch {
    protocol = undefined;
  }
  // The text itself must start so: the URL parser also reads `http:host` or ` http://…` as http URLs.
  if ((protocol !== 'https:' && protocol !== 'http:') || !/^https?:\/\/[^/]/i.test(link)) {
    const message = 'body.profilePictureUrl must be an absolute http: or https: URL';
    throw new BadRequestError(message, { messages: [message] });
  }
}
