import { contentDigest, randomBase64Url } from './encoding.ts';
import { signatureBase } from './signature-base.ts';
import type { Signer } from './signer.ts';

/** One request as it will go on the wire. */
export interface RequestToSign {
  method: string;
  /** Where it goes; only the path and query are signed, exactly as they will be sent. */
  url: Pick<URL, 'pathname' | 'search'>;
  idempotencyKey: string;
  /** The exact body bytes sent, if any. */
  body?: Uint8Array<ArrayBuffer>;
  /** The Authorization header value, if sent. */
  authorization?: string;
  /** Unix seconds; defaults to now. */
  created?: number;
  /** Defaults to 32 fresh random characters. */
  nonce?: string;
}

/** The headers that make a request acceptable to the gateway (CONTRACT.md parts 2 and 3). */
export interface SignedHeaders {
  'x-idempotency-key': string;
  'content-digest'?: string;
  authorization?: string;
  'signature-input': string;
  signature: string;
}

/** A fresh nonce: 24 random bytes as 32 base64url characters (the gateway accepts 16–128). */
export function newNonce(): string {
  return randomBase64Url(24);
}

/**
 * Signs one request: digests the body, builds the signature base from the URL's own `pathname` and
 * `search` (exactly what `fetch` sends, percent-encoding included) and returns every header to send.
 */
export async function signRequest(request: RequestToSign, signer: Signer): Promise<SignedHeaders> {
  const digest = request.body !== undefined ? await contentDigest(request.body) : undefined;
  const { base, params } = signatureBase({
    method: request.method,
    path: request.url.pathname,
    query: request.url.search,
    idempotencyKey: request.idempotencyKey,
    contentDigest: digest,
    authorization: request.authorization,
    created: request.created ?? Math.floor(Date.now() / 1000),
    nonce: request.nonce ?? newNonce(),
    keyId: signer.keyId,
    alg: signer.alg,
  });
  const headers: SignedHeaders = {
    'x-idempotency-key': request.idempotencyKey,
    'signature-input': `sig1=${params}`,
    signature: `sig1=:${await signer.sign(base)}:`,
  };
  if (digest !== undefined) headers['content-digest'] = digest;
  if (request.authorization !== undefined) headers.authorization = request.authorization;
  return headers;
}
