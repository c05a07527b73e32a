// The load generator's request signing (CONTRACT.md part 2), through the SDK (@platform/client): its
// signature base and Content-Digest, so the benchmark signs exactly as clients do. Set-up calls use the
// SDK's whole signRequest. Under load autocannon asks for each request's headers synchronously, and the
// SDK signs with WebCrypto (asynchronous), so there the SDK's signature base is keyed with node:crypto's
// HMAC over one KeyObject; the digest of each request shape is computed once, and nonces and
// idempotency keys are a random run prefix plus a counter instead of fresh random bytes each time.
import { createHmac, createSecretKey, randomBytes, randomUUID } from 'node:crypto';
import { contentDigest, createSigner as createSdkSigner, signRequest, signatureBase } from '@platform/client';

/** What is the same for every request of one scenario. */
export interface RequestShape {
  method: 'GET' | 'POST';
  /** Path and query as sent. */
  target: string;
  body?: string;
  /** The bearer token, when the route needs one. */
  bearer?: string;
}

/** A client key the gateway knows (hmac-sha256). */
export interface SigningKey {
  keyId: string;
  secret: string;
}

/** Returns every header of one freshly signed request of the shape it was made for. */
export type HeaderMaker = () => Record<string, string>;

// One prefix per process, so two runs against the same Redis never share a nonce or idempotency key.
const RUN = randomBytes(9).toString('base64url');
let counter = 0;

/** A nonce of 16–128 characters of `[A-Za-z0-9_-]`, unique within this process and (by its prefix) across runs. */
function nextId(): string {
  counter += 1;
  return `${RUN}${counter.toString(36).padStart(8, '0')}`;
}

const utf8 = new TextEncoder();

/** The headers a request of `shape` carries besides the signature's. */
function plainHeadersOf(shape: RequestShape): Record<string, string> {
  const headers: Record<string, string> = {};
  if (shape.body !== undefined && shape.body !== '') headers['content-type'] = 'application/json';
  if (shape.bearer !== undefined) headers.authorization = `Bearer ${shape.bearer}`;
  return headers;
}

/** A signer for one client key; `for(shape)` precomputes what every request of that shape shares. */
export function createSigner(key: SigningKey): { for(shape: RequestShape): Promise<HeaderMaker> } {
  const secret = createSecretKey(Buffer.from(key.secret, 'utf8'));
  return {
    async for(shape) {
      const url = new URL(shape.target, 'http://gateway');
      const fixed = plainHeadersOf(shape);
      if (shape.body !== undefined && shape.body !== '') fixed['content-digest'] = await contentDigest(utf8.encode(shape.body));
      return () => {
        const idempotencyKey = nextId();
        const { base, params } = signatureBase({
          method: shape.method,
          path: url.pathname,
          query: url.search,
          idempotencyKey,
          contentDigest: fixed['content-digest'],
          authorization: fixed.authorization,
          created: Math.floor(Date.now() / 1000),
          nonce: nextId(),
          keyId: key.keyId,
          alg: 'hmac-sha256',
        });
        const signature = createHmac('sha256', secret).update(base).digest('base64');
        return { ...fixed, 'x-idempotency-key': idempotencyKey, 'signature-input': `sig1=${params}`, signature: `sig1=:${signature}:` };
      };
    },
  };
}

/** Every header of one request of `shape` to `url`, signed by the SDK itself (set-up calls, not measured). */
export async function signOnce(key: SigningKey, url: URL, shape: RequestShape): Promise<Record<string, string>> {
  const body = shape.body === undefined || shape.body === '' ? undefined : utf8.encode(shape.body);
  const plain = plainHeadersOf(shape);
  const signed = await signRequest(
    { method: shape.method, url, idempotencyKey: randomUUID(), body, authorization: plain.authorization },
    createSdkSigner(key.keyId, { alg: 'hmac-sha256', secret: key.secret }),
  );
  return { ...plain, ...signed };
}

/** The headers of an unsigned request of the shape (straight to a service, past the gateway). */
export function plainHeaders(shape: RequestShape): Record<string, string> {
  return plainHeadersOf(shape);
}
