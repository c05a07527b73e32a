import { TOKEN_BOUND_ELSEWHERE_MESSAGE, type TokenVerifier, assertSecondFactor, isBoundElsewhere } from '@platform/auth';
import { UnauthorizedError } from '@platform/errors';
import type { Step } from '../pipeline/chain.ts';
import type { GatewayMetrics } from '../pipeline/gateway-metrics.ts';
import { checkBearer, knownBearer } from './bearer-check.ts';

/**
 * Step 4, before admission: the bearer token of an operation that needs one, or that takes one and got it
 * (a token is optional on the password reset request: an ADMIN's gets the reset token in the answer),
 * verified on the CPU (keys, `iss`, `aud`, `exp`), so that its revocation keys join admission's one round
 * trip. A bad token is kept as the verdict, not thrown: a replayed nonce still answers 409 first (CONTRACT.md
 * part 3 order).
 */
export function verifyBearer(tokens: TokenVerifier): Step {
  return (request) => {
    const { operation, req } = request;
    const { authorization } = req.headers;
    if (!operation.needsBearer && !(operation.acceptsBearer && authorization !== undefined)) return undefined;
    // A token verified before (a client sends the same one with every request): decided at once, no promise.
    const known = knownBearer(tokens, authorization);
    if (known !== undefined) {
      request.bearer = known;
      return undefined;
    }
    return checkBearer(tokens, authorization).then((verdict) => {
      request.bearer = verdict;
    });
  };
}

/**
 * Step 6, after admission: the bearer verdict, then the revocation admission read (a revoked token keeps its
 * idempotency key: a 401 is not a 5xx), then the binding: with `binding` on, a token issued to another client
 * key than the one whose signature the request carries answers 401 `Token bound to another client` (CONTRACT.md
 * part 16), then the second factor: an `aal` 1 token of a user who must show one answers 403 `Second factor
 * required` but on the operations of enrolment and the second factor itself.
 */
export function requireBearer(metrics: GatewayMetrics, binding: boolean): Step {
  return (request) => {
    if (request.bearer.fault !== undefined) {
      metrics.rejected('bearer');
      throw request.bearer.fault;
    }
    if (request.admission?.outcome === 'token-revoked') {
      metrics.rejected('bearer');
      throw new UnauthorizedError('Bad Credentials', { cause: new Error('token is revoked') });
    }
    const { principal } = request.bearer;
    if (principal !== undefined && binding && isBoundElsewhere(principal, request.keyId)) {
      metrics.rejected('token-binding');
      throw new UnauthorizedError(TOKEN_BOUND_ELSEWHERE_MESSAGE, { cause: new Error(`token bound to client key ${principal.clientKeyId}`) });
    }
    if (principal !== undefined && !request.operation.firstFactorSuffices && principal.aal < 2 && principal.secondFactorRequired) {
      metrics.rejected('second-factor');
      assertSecondFactor(principal);
    }
  };
}
