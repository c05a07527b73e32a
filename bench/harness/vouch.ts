// The headers a service reads from the gateway (CONTRACT.md part 10), for the bench's callers that stand
// in for it: the harness calling risk as the gateway does (context.ts `vouchedTarget`) and limits E and E′
// forwarding (bench/limits/common.ts). Kept apart so that a limit server loads nothing else of the harness.
import { CLIENT_KEY_ID_HEADER, type ForwardedFacts, INTERNAL_ASSERTION_HEADER, assertForwarding } from '@platform/service-kit';

/** The forwarding headers of `facts` and the `v3` assertion that vouches for them with `assertionKey`. */
export function vouchedHeaders(assertionKey: string, facts: ForwardedFacts): Record<string, string> {
  return {
    'x-forwarded-for': facts.forwardedFor,
    'x-forwarded-proto': facts.forwardedProto,
    [CLIENT_KEY_ID_HEADER]: facts.clientKeyId,
    ...(facts.requestId === undefined ? {} : { 'x-request-id': facts.requestId }),
    [INTERNAL_ASSERTION_HEADER]: assertForwarding(assertionKey, facts),
  };
}
