// A client-side RFC 9421 signer written from the RFC text alone, sharing no code with the gateway's
// verifier, so a bug on one side cannot cancel out a bug on the other.
import { type KeyObject, createHash, createHmac, randomBytes, randomUUID, sign } from 'node:crypto';

export type TestSigningKey = { keyId: string; alg: 'hmac-sha256'; secret: string } | { keyId: string; alg: 'ed25519'; privateKey: KeyObject };

export interface SignOptions {
  method: string;
  /** Path and query as sent, e.g. `/v1/x?a=1`. */
  target: string;
  /** The headers the request carries (lower-case names); covered header values are read from here. */
  headers: Record<string, string>;
  body?: Buffer;
  key: TestSigningKey;
  /** Defaults: a fresh random nonce, now, the contract's components for this request. */
  nonce?: string;
  created?: number;
  expires?: number;
  components?: string[];
  /** `alg` parameter to state; omitted by default. */
  alg?: string;
  label?: string;
  /** Signs with this key instead of `key` (wrong-secret tests), still naming `key.keyId`. */
  signWith?: TestSigningKey;
}

/** A nonce the contract accepts: 22 characters of base64url. */
export const newNonce = (): string => randomBytes(16).toString('base64url');

/** A fresh idempotency key. */
export const newIdempotencyKey = (): string => `idem-${randomUUID()}`;

/** `sha-256=:…:` per RFC 9530. */
export const digestOf = (body: Buffer): string => `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;

function componentValue(name: string, options: SignOptions): string {
  const at = options.target.indexOf('?');
  if (name === '@method') return options.method.toUpperCase();
  if (name === '@path') return at === -1 ? options.target : options.target.slice(0, at);
  if (name === '@query') return at === -1 ? '?' : options.target.slice(at);
  const value = options.headers[name];
  if (value === undefined) throw new Error(`test signer: header ${name} is not on the request`);
  return value.trim();
}

/** The Signature-Input and Signature headers for a request, per RFC 9421 sections 2.3–3.1. */
export function signatureHeaders(options: SignOptions): { 'signature-input': string; signature: string } {
  const components =
    options.components ??
    [
      '@method',
      '@path',
      '@query',
      'x-idempotency-key',
      ...(options.body !== undefined && options.body.length > 0 ? ['content-digest'] : []),
      ...(options.headers.authorization !== undefined ? ['authorization'] : []),
    ];
  let params = `(${components.map((c) => `"${c}"`).join(' ')});created=${options.created ?? Math.floor(Date.now() / 1000)}`;
  if (options.expires !== undefined) params += `;expires=${options.expires}`;
  params += `;keyid="${options.key.keyId}";nonce="${options.nonce ?? newNonce()}"`;
  if (options.alg !== undefined) params += `;alg="${options.alg}"`;
  const base = [...components.map((c) => `"${c}": ${componentValue(c, options)}`), `"@signature-params": ${params}`].join('\n');
  const key = options.signWith ?? options.key;
  const signature =
    key.alg === 'hmac-sha256' ? createHmac('sha256', Buffer.from(key.secret, 'utf8')).update(base).digest() : sign(null, Buffer.from(base), key.privateKey);
  const label = options.label ?? 'sig1';
  return { 'signature-input': `${label}=${params}`, signature: `${label}=:${signature.toString('base64')}:` };
}

export interface SignedRequestOptions extends Partial<Omit<SignOptions, 'method' | 'target' | 'headers' | 'key'>> {
  key: TestSigningKey;
  headers?: Record<string, string>;
  idempotencyKey?: string;
  bearer?: string;
}

/** Every header of a correctly signed request: idempotency key, digest (with a body), bearer, signature. */
export function signedHeaders(method: string, target: string, options: SignedRequestOptions): Record<string, string> {
  const headers: Record<string, string> = { 'x-idempotency-key': options.idempotencyKey ?? newIdempotencyKey(), ...options.headers };
  if (options.body !== undefined && options.body.length > 0) {
    headers['content-digest'] ??= digestOf(options.body);
    headers['content-type'] ??= 'application/json';
  }
  if (options.bearer !== undefined) headers.authorization = `Bearer ${options.bearer}`;
  return { ...headers, ...signatureHeaders({ ...options, method, target, headers }) };
}
