// An independent RFC 9421 verifier for the tests: it rebuilds the signature base from the request as
// the server received it (raw target, headers, body), sharing no code with the SDK's signer.
import { createHash, createHmac, type KeyObject, timingSafeEqual, verify } from 'node:crypto';
import type { Recorded } from './fake-gateway.ts';

export type VerifyKey = { alg: 'hmac-sha256'; secret: string } | { alg: 'ed25519'; publicKey: KeyObject };

/** The parsed Signature-Input of a request. */
export interface ParsedSignature {
  components: string[];
  created: number;
  nonce: string;
  keyId: string;
  alg: string;
  params: string;
}

/** Parses `sig1=("…" …);created=…;nonce="…";keyid="…";alg="…"` strictly, in the SDK's parameter order. */
export function parseSignatureInput(value: string): ParsedSignature {
  const m = /^sig1=(\(((?:"[^"]+" ?)*)\);created=(\d+);nonce="([^"]*)";keyid="([^"]*)";alg="([^"]*)")$/.exec(value);
  if (m === null) throw new Error(`unexpected Signature-Input: ${value}`);
  return { params: m[1]!, components: [...m[2]!.matchAll(/"([^"]+)"/g)].map((c) => c[1]!), created: Number(m[3]), nonce: m[4]!, keyId: m[5]!, alg: m[6]! };
}

/** Throws unless the request is signed as CONTRACT.md part 2 requires, with `key`; returns the parsed input. */
export function verifyRecorded(req: Recorded, key: VerifyKey): ParsedSignature {
  const header = (name: string): string => {
    const value = req.headers[name];
    if (typeof value !== 'string') throw new Error(`missing header ${name}`);
    return value.trim();
  };
  const parsed = parseSignatureInput(header('signature-input'));
  const expected = ['@method', '@path', '@query', 'x-idempotency-key'];
  if (req.body.length > 0) expected.push('content-digest');
  if (req.headers.authorization !== undefined) expected.push('authorization');
  if (parsed.components.join(' ') !== expected.join(' ')) throw new Error(`covers ${parsed.components.join(' ')}, expected ${expected.join(' ')}`);
  if (req.body.length > 0 && header('content-digest') !== `sha-256=:${createHash('sha256').update(req.body).digest('base64')}:`) throw new Error('content-digest does not match the body');
  const at = req.url.indexOf('?');
  const value = (name: string): string =>
    name === '@method' ? req.method : name === '@path' ? (at === -1 ? req.url : req.url.slice(0, at)) : name === '@query' ? (at === -1 ? '?' : req.url.slice(at)) : header(name);
  const base = [...parsed.components.map((c) => `"${c}": ${value(c)}`), `"@signature-params": ${parsed.params}`].join('\n');
  const sig = /^sig1=:([A-Za-z0-9+/=]+):$/.exec(header('signature'))?.[1];
  if (sig === undefined) throw new Error('malformed Signature header');
  const signature = Buffer.from(sig, 'base64');
  const ok =
    key.alg === 'hmac-sha256'
      ? (() => {
          const mac = createHmac('sha256', key.secret).update(base, 'utf8').digest();
          return mac.length === signature.length && timingSafeEqual(mac, signature);
        })()
      : verify(null, Buffer.from(base, 'utf8'), key.publicKey, signature);
  if (!ok) throw new Error(`bad signature over:\n${base}`);
  return parsed;
}
