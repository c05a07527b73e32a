import { contentDigestProblem } from './content-digest.ts';
import { type SignedRequest, signatureBase } from './signature-base.ts';
import { SignatureFault } from './signature-fault.ts';
import { readSignature } from './signature-headers.ts';
import { signatureMatches } from './signature-match.ts';
import { SIGNATURE_LABEL, assertCovers, checkParams, requiredComponents } from './signature-policy.ts';
import type { KeyLookup } from './verification-keys.ts';

/** What the gateway needs to verify signatures. */
export interface SignatureVerifierOptions {
  keys: KeyLookup;
  /** Allowed distance of `created` from the clock, seconds. */
  maxSkewS: number;
  /** The clock, epoch milliseconds; tests may move it. */
  now?: () => number;
}

/** Who signed a request, and with which nonce. */
export interface VerifiedSignature {
  keyId: string;
  nonce: string;
  /** When the client says it signed (Unix seconds), within the skew window. */
  created: number;
  /** The key may call the introspection endpoint (its entry says `"introspection": true`). */
  introspection: boolean;
}

/**
 * Verifies a request's `sig1` signature against CONTRACT.md part 2, cheapest checks first, and
 * says who signed it. Throws a SignatureFault whose message is the precise reason (for the log).
 */
export function verifyRequestSignature(request: SignedRequest, body: Buffer, options: SignatureVerifierOptions): VerifiedSignature {
  const entry = readSignature(request.headers, SIGNATURE_LABEL);
  const hasBody = body.length > 0;
  assertCovers(entry.bareComponents, requiredComponents({ hasBody, hasAuthorization: request.headers.authorization !== undefined }));
  const nowMs = (options.now ?? Date.now)();
  const nowS = Math.floor(nowMs / 1000);
  const params = checkParams(entry.params, nowS, options.maxSkewS);
  const key = options.keys.get(params.keyId);
  // The key id is the client's text: cut it short, the log line should stay a line.
  if (key === undefined) throw new SignatureFault(`unknown keyid "${params.keyId.slice(0, 128)}"`);
  if (key.notAfter !== undefined && nowMs >= key.notAfter) throw new SignatureFault(`key "${key.keyId}" retired at ${new Date(key.notAfter).toISOString()} (notAfter)`);
  if (params.alg !== undefined && params.alg !== key.alg) throw new SignatureFault(`alg "${params.alg.slice(0, 64)}" is not the key's ${key.alg}`);
  const digestHeader = request.headers['content-digest'];
  if (hasBody || digestHeader !== undefined) {
    const problem = contentDigestProblem(Array.isArray(digestHeader) ? digestHeader.join(', ') : digestHeader, body);
    if (problem !== undefined) throw new SignatureFault(problem);
  }
  if (!signatureMatches(signatureBase(request, entry), entry.signature, key)) {
    throw new SignatureFault('signature does not match');
  }
  return { keyId: params.keyId, nonce: params.nonce, created: params.created, introspection: key.introspection === true };
}
