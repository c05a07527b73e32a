import { UnauthorizedError } from '@platform/errors';
import type { Request, RequestHandler } from 'express';
import { type Principal, assertAnyRole, assertSecondFactor } from './principal.ts';
import type { Role } from './roles.ts';
import type { TokenVerifier } from './verifier.ts';

const principals = new WeakMap<Request, Principal>();

/** The token in `Authorization: Bearer <token>`, or undefined. The scheme is case-insensitive (RFC 9110). */
export function bearerTokenOf(header: string | undefined): string | undefined {
  const match = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(header ?? '');
  return match?.[1];
}

export interface BearerAuthOptions {
  /**
   * True when the gateway checked this request's token against the revocations a moment ago (its `v3`
   * assertion over this very `Authorization`, CONTRACT.md part 10: service-kit's `gatewayCheckedBearer`):
   * the token is then verified without a second revocation read, and a token this verifier verified
   * before is taken at once (`TokenVerifier.known`), with no promise. Without it every token is checked fully.
   */
  checkedByGateway?: (req: Request) => boolean;
  /** The route is one of enrolment or of the second factor itself: an `aal` 1 token suffices (CONTRACT.md part 15). */
  firstFactorSuffices?: boolean;
}

/** Middleware: the request needs a valid bearer token; its principal is then available through `principalOf`. */
export function bearerAuth(verifier: TokenVerifier, options: BearerAuthOptions = {}): RequestHandler {
  const { checkedByGateway } = options;
  const firstFactorSuffices = options.firstFactorSuffices === true;
  const checked = { ignoreRevocation: true, firstFactorSuffices } as const;
  const full = { firstFactorSuffices } as const;
  return (req, _res, next) => {
    const token = bearerTokenOf(req.headers.authorization);
    if (token === undefined) {
      next(new UnauthorizedError('Bad Credentials', { cause: new Error('no bearer token') }));
      return;
    }
    const vouched = checkedByGateway?.(req) === true;
    const known = vouched ? verifier.known(token) : undefined;
    if (known !== undefined) {
      // Decided at once: no promise, no microtask. The second factor is this route's to ask all the same.
      if (!firstFactorSuffices) assertSecondFactor(known);
      principals.set(req, known);
      next();
      return;
    }
    verifier.verify(token, vouched ? checked : full).then(
      (principal) => {
        principals.set(req, principal);
        next();
      },
      (err: unknown) => next(err),
    );
  };
}

/** The principal `bearerAuth` found for this request; 401 when the route was not behind it. */
export function principalOf(req: Request): Principal {
  const principal = principals.get(req);
  if (principal === undefined) throw new UnauthorizedError();
  return principal;
}

/** Middleware: 403 unless the caller holds one of the roles. Mount after `bearerAuth`. */
export function requireAnyRole(...roles: Role[]): RequestHandler {
  return (req, _res, next) => {
    assertAnyRole(principalOf(req), roles);
    next();
  };
}
