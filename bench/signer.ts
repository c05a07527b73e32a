// A load generator's RFC 9421 signer (CONTRACT.md part 2). Every request gets a fresh nonce and
// idempotency key, so the per-request cost must stay small beside the gateway's: the key object is
// made once, the constant lines of each signature base once per request shape, and nonces are a
// random run prefix plus a counter instead of fresh random bytes each time.
import { type KeyObject, createHash, createHmac, createSecretKey, randomBytes } from 'node:crypto';

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

/** A signer for one client key; `for(shape)` precomputes what every request of that shape shares. */
export function createSigner(key: SigningKey): { for(shape: RequestShape): HeaderMaker } {
  const secret: KeyObject = createSecretKey(Buffer.from(key.secret, 'utf8'));
  return {
    for(shape) {
      const at = shape.target.indexOf('?');
      const path = at === -1 ? shape.target : shape.target.slice(0, at);
      const query = at === -1 ? '?' : shape.target.slice(at);
      const fixed: Record<string, string> = {};
      const components = ['"@method"', '"@path"', '"@query"', '"x-idempotency-key"'];
      let tail = '';
      if (shape.body !== undefined && shape.body !== '') {
        fixed['content-type'] = 'application/json';
        fixed['content-digest'] = `sha-256=:${createHash('sha256').update(shape.body).digest('base64')}:`;
        components.push('"content-digest"');
        tail += `"content-digest": ${fixed['content-digest']}\n`;
      }
      if (shape.bearer !== undefined) {
        fixed.authorization = `Bearer ${shape.bearer}`;
        components.push('"authorization"');
        tail += `"authorization": ${fixed.authorization}\n`;
      }
      const head = `"@method": ${shape.method}\n"@path": ${path}\n"@query": ${query}\n"x-idempotency-key": `;
      const paramsHead = `(${components.join(' ')});created=`;
      const paramsKey = `;keyid="${key.keyId}";nonce="`;
      return () => {
        const idempotencyKey = nextId();
        const params = `${paramsHead}${Math.floor(Date.now() / 1000)}${paramsKey}${nextId()}"`;
        const base = `${head}${idempotencyKey}\n${tail}"@signature-params": ${params}`;
        const signature = createHmac('sha256', secret).update(base).digest('base64');
        return { ...fixed, 'x-idempotency-key': idempotencyKey, 'signature-input': `sig1=${params}`, signature: `sig1=:${signature}:` };
      };
    },
  };
}

/** The headers of an unsigned request of the shape (straight to a service, past the gateway). */
export function plainHeaders(shape: RequestShape): Record<string, string> {
  const headers: Record<string, string> = {};
  if (shape.body !== undefined && shape.body !== '') headers['content-type'] = 'application/json';
  if (shape.bearer !== undefined) headers.authorization = `Bearer ${shape.bearer}`;
  return headers;
}
