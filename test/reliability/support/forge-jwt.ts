import { type KeyObject, createHmac, sign } from 'node:crypto';

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** How a forged token is signed: with a key (ES256), an HMAC secret (HS256), or not at all (`none`). */
export type Forgery = { es256: KeyObject } | { hs256: Buffer } | { none: true };

/**
 * A JWT built by hand, so a test can make exactly the token an attacker would: any header, any claims,
 * any (or no) signature. Nothing here is shared with the code that verifies tokens.
 */
export function forgeJwt(header: Record<string, unknown>, claims: Record<string, unknown>, how: Forgery): string {
  const input = `${b64(header)}.${b64(claims)}`;
  if ('none' in how) return `${input}.`;
  const signature = 'hs256' in how ? createHmac('sha256', how.hs256).update(input).digest() : sign('sha256', Buffer.from(input), { key: how.es256, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

/** The claims of a token as the service would read them (no verification). */
export function claimsOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** The header of a token (no verification). */
export function headerOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
}
