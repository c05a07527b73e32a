import { createHmac, timingSafeEqual } from 'node:crypto';

/** RFC 6238 as CONTRACT.md part 15 fixes it: HMAC-SHA-1, 6 digits, 30-second steps. */
export const TOTP_DIGITS = 6;
export const TOTP_STEP_S = 30;
/** Steps accepted either side of the current one (a clock a step off, a code typed at a step's end). */
const WINDOW = 1;

/** RFC 4226 HOTP: the `digits`-digit code of `counter` under `secret`. */
export function hotp(secret: Buffer, counter: number, digits = TOTP_DIGITS): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', secret).update(message).digest();
  // Dynamic truncation (RFC 4226 section 5.3): 31 bits from the offset the last nibble names.
  const offset = (mac[mac.length - 1] ?? 0) & 0x0f;
  const bits = (((mac[offset] ?? 0) & 0x7f) << 24) | ((mac[offset + 1] ?? 0) << 16) | ((mac[offset + 2] ?? 0) << 8) | (mac[offset + 3] ?? 0);
  return String(bits % 10 ** digits).padStart(digits, '0');
}

/** The TOTP step (RFC 6238 `T`) of an instant in ms. */
export function stepAt(ms: number): number {
  return Math.floor(ms / 1000 / TOTP_STEP_S);
}

/**
 * The step whose code `code` is, among the current step of `nowMs` and one either side, or undefined. Every
 * candidate is computed and compared in constant time, whatever matched: how long it takes says nothing.
 */
export function matchingStep(secret: Buffer, code: string, nowMs: number): number | undefined {
  const given = Buffer.from(code.padEnd(TOTP_DIGITS, ' ').slice(0, 16));
  const current = stepAt(nowMs);
  let found: number | undefined;
  for (let step = current - WINDOW; step <= current + WINDOW; step += 1) {
    const expected = Buffer.from(hotp(secret, step).padEnd(TOTP_DIGITS, ' '));
    const same = given.length === expected.length && timingSafeEqual(given, expected);
    if (same && found === undefined) found = step;
  }
  return found;
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 without padding, as authenticator apps read a secret. */
export function base32(bytes: Buffer): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(buffer << (5 - bits)) & 31];
  return out;
}

/** The `otpauth://totp/` URI an authenticator app takes (the Key Uri Format), for `account` at `issuer`. */
export function otpauthUri(secret: Buffer, issuer: string, account: string): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`;
  const query = new URLSearchParams({ secret: base32(secret), issuer, algorithm: 'SHA1', digits: String(TOTP_DIGITS), period: String(TOTP_STEP_S) });
  return `otpauth://totp/${label}?${query.toString()}`;
}
