import { BadRequestError } from '@platform/errors';

/** 1 to 255 visible ASCII characters (CONTRACT.md part 3); a space or a second header line makes it malformed. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The request's idempotency key; 400 `Missing X-Idempotency-Key header` when it is absent or malformed. */
export function idempotencyKeyOf(header: string | string[] | undefined): string {
  if (typeof header !== 'string' || !IDEMPOTENCY_KEY.test(header)) throw new BadRequestError('Missing X-Idempotency-Key header');
  return header;
}

