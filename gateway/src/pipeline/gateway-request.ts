import type { Request, Response } from 'express';
import type { Admission } from '../admission/admission.ts';
import type { BearerVerdict } from '../bearer/bearer-check.ts';
import type { GatewayOperation } from '../proxy/operation-table.ts';
import type { RateLimitPolicy } from '../rate-limit/rate-limits.ts';

const EMPTY = Buffer.alloc(0);
const NO_BEARER: BearerVerdict = { principal: undefined };

/**
 * One API request on its way through the chain (api.router.ts): what each step found, for the steps after
 * it. Made per request by the chain, never kept on `req` or `res`. Every field has its value from the start
 * (one shape for V8); the comment says which step sets it.
 */
export class GatewayRequest {
  /** idempotencyHeader. */
  idempotencyKey = '';
  /** readBody: the bytes received (the digest is checked against them, and they are what is forwarded). */
  body: Buffer = EMPTY;
  /** verifySignature: the verified signing key id, the signature's nonce and `created` (Unix seconds). */
  keyId = '';
  nonce = '';
  created = 0;
  /** verifySignature: the key's rate limit. */
  policy: RateLimitPolicy | undefined = undefined;
  /** verifySignature: the key's entry says `"introspection": true` (requireIntrospectionKey). */
  mayIntrospect = false;
  /** verifyBearer: the token verified on the CPU (its revocation keys join admission's round trip). */
  bearer: BearerVerdict = NO_BEARER;
  /** admit: what Redis said. */
  admission: Admission | undefined = undefined;
  /**
   * admit: this request may hold its idempotency key, from the moment its claim is sent (a claim whose
   * answer was lost may have run) until the answer says it claimed nothing. The chain releases it by the
   * one rule (chain.ts).
   */
  mayHoldKey = false;
  readonly req: Request;
  readonly res: Response;
  readonly operation: GatewayOperation;
  /** Written into the claimed keys: only this request can release its idempotency key. */
  readonly owner: string;

  constructor(req: Request, res: Response, operation: GatewayOperation, owner: string) {
    this.req = req;
    this.res = res;
    this.operation = operation;
    this.owner = owner;
  }
}
