// Byte helpers on the platform's own primitives (btoa/atob, TextEncoder, WebCrypto), so the SDK runs
// wherever `fetch` and WebCrypto exist, not only on Node (no Buffer).

const utf8 = new TextEncoder();

/** The UTF-8 bytes of `text`. */
export function utf8Bytes(text: string): Uint8Array<ArrayBuffer> {
  return utf8.encode(text);
}

/** Standard base64 (with padding) of `bytes`, as RFC 9421 byte sequences and RFC 9530 digests use it. */
export function base64(bytes: Uint8Array | ArrayBuffer): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let binary = '';
  for (const byte of view) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** The bytes of a standard base64 text (whitespace ignored), e.g. the body of a PEM block. */
export function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text.replace(/\s+/g, ''));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** `count` random bytes as base64url without padding: only `[A-Za-z0-9_-]`, as the nonce must be. */
export function randomBase64Url(count: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(count));
  return base64(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** `sha-256=:<base64>:`, the RFC 9530 Content-Digest of exactly these bytes. */
export async function contentDigest(body: Uint8Array<ArrayBuffer>): Promise<string> {
  return `sha-256=:${base64(await crypto.subtle.digest('SHA-256', body))}:`;
}
