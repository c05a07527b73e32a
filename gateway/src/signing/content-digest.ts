import { createHash, timingSafeEqual } from 'node:crypto';
import { parseDictionary } from 'structured-headers';

/** The RFC 9530 `Content-Digest` value for a body: `sha-256=:<base64 of SHA-256>:`. */
export function contentDigestOf(body: Uint8Array): string {
  return `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
}

/**
 * What is wrong with a `Content-Digest` header for these body bytes, or undefined when its `sha-256`
 * entry matches them. Other algorithms a client lists beside `sha-256` are ignored; `sha-256` must be there.
 */
export function contentDigestProblem(header: string | undefined, body: Uint8Array): string | undefined {
  if (header === undefined) return 'Content-Digest header missing';
  // The form the SDK sends, one canonical sha-256 member, is read without the structured-field parser.
  const canonical = CANONICAL_SHA256.exec(header);
  if (canonical !== null) return digestProblem(Buffer.from(canonical[1] as string, 'base64'), body);
  let entry;
  try {
    entry = parseDictionary(header).get('sha-256');
  } catch {
    return 'Content-Digest is not a structured dictionary';
  }
  if (entry === undefined) return 'Content-Digest has no sha-256 entry';
  const [value] = entry;
  if (!(value instanceof ArrayBuffer)) return 'Content-Digest sha-256 is not a byte sequence';
  return digestProblem(Buffer.from(value), body);
}

/** A `Content-Digest` of one `sha-256` member in canonical base64 (32 bytes). */
const CANONICAL_SHA256 = /^sha-256=:([A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=):$/;

function digestProblem(given: Buffer, body: Uint8Array): string | undefined {
  const expected = createHash('sha256').update(body).digest();
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'Content-Digest does not match the body';
  return undefined;
}
