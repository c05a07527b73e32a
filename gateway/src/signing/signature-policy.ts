import type { Parameters } from 'structured-headers';
import { SignatureFault } from './signature-fault.ts';
import { integerParam, stringParam } from './signature-headers.ts';

/** The label every request signature must use (CONTRACT.md part 2). */
export const SIGNATURE_LABEL = 'sig1';

/** A nonce as CONTRACT.md part 2 allows it: 16 to 128 characters of `[A-Za-z0-9_-]`. */
export const NONCE = /^[A-Za-z0-9_-]{16,128}$/;

/** What a request must have signed: the four fixed components, plus its digest and its bearer when sent. */
export function requiredComponents(request: { hasBody: boolean; hasAuthorization: boolean }): string[] {
  const required = ['@method', '@path', '@query', 'x-idempotency-key'];
  if (request.hasBody) required.push('content-digest');
  if (request.hasAuthorization) required.push('authorization');
  return required;
}

/** Throws unless every required component is covered (without component parameters). */
export function assertCovers(covered: readonly string[], required: readonly string[]): void {
  const missing = required.filter((name) => !covered.includes(name));
  if (missing.length > 0) throw new SignatureFault(`required component not covered: ${missing.join(', ')}`);
}

/** The signature parameters the gateway acts on. */
export interface SignatureParams {
  keyId: string;
  nonce: string;
  created: number;
  alg: string | undefined;
}

/**
 * How long a signature's nonce must be remembered, in seconds (CONTRACT.md part 2). `created` is accepted
 * within ±`maxSkewS` of the clock in whole seconds, a span of 2 × skew + 1 seconds: a signature dated at
 * the far end of it, used at once, can be sent again until 2 × skew + 1 s later. One second more covers
 * the clocks' second boundaries (and gateways whose clocks are a little apart). Twice the skew alone let a
 * request be replayed in its window's last second.
 */
export function nonceLifetimeS(maxSkewS: number): number {
  return 2 * maxSkewS + 2;
}

/**
 * How long an idempotency key is remembered: as configured (IDEMPOTENCY_TTL_SAFE_S, _UNSAFE_S), but never
 * less than a nonce, so that a signed request is refused twice over for as long as it can be accepted.
 */
export function idempotencyKeyLifetimeS(configuredS: number, maxSkewS: number): number {
  return Math.max(configuredS, nonceLifetimeS(maxSkewS));
}

/**
 * Checks the parameters of CONTRACT.md part 2: `keyid` and `nonce` present and well-formed, `created`
 * within ±`maxSkewS` of `nowS`, `expires` (when given) not past, `alg` (when given) a string.
 */
export function checkParams(params: Parameters, nowS: number, maxSkewS: number): SignatureParams {
  const keyId = stringParam(params, 'keyid');
  if (keyId === undefined) throw new SignatureFault('keyid parameter missing or not a string');
  const nonce = stringParam(params, 'nonce');
  if (nonce === undefined) throw new SignatureFault('nonce parameter missing or not a string');
  if (!NONCE.test(nonce)) throw new SignatureFault('nonce must be 16-128 characters of [A-Za-z0-9_-]');
  const created = integerParam(params, 'created');
  if (created === undefined) throw new SignatureFault('created parameter missing or not an integer');
  if (created > nowS + maxSkewS) throw new SignatureFault(`created is ${created - nowS} s in the future`);
  if (created < nowS - maxSkewS) throw new SignatureFault(`created is ${nowS - created} s old`);
  if (params.has('expires')) {
    const expires = integerParam(params, 'expires');
    if (expires === undefined) throw new SignatureFault('expires parameter is not an integer');
    if (expires < nowS) throw new SignatureFault(`signature expired ${nowS - expires} s ago`);
  }
  const alg = params.has('alg') ? stringParam(params, 'alg') : undefined;
  if (params.has('alg') && alg === undefined) throw new SignatureFault('alg parameter is not a string');
  return { keyId, nonce, created, alg };
}
