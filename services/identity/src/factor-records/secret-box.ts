import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** The layout's version, so that a later one can be told apart: version, 12-byte IV, 16-byte tag, ciphertext. */
const VERSION = 1;

/** Seals and opens the TOTP secrets at rest (CONTRACT.md part 15): AES-256-GCM under SECOND_FACTOR_ENCRYPTION_KEY. */
export interface SecretBox {
  /** Encrypts `plain`, bound to `context` (the factor's id: a ciphertext moved to another row does not open). */
  seal(plain: Buffer, context: string): Buffer;
  /** Decrypts what `seal` made for `context`; throws when it was changed or belongs elsewhere. */
  open(sealed: Buffer, context: string): Buffer;
}

/**
 * A box over `key`: any text (the configured secret); the AES key is its SHA-256, so a passphrase of any
 * length gives a 256-bit key and the configured text is never the key itself.
 */
export function secretBox(key: string): SecretBox {
  const aesKey = createHash('sha256').update(`second-factor-secret-box:${key}`).digest();
  return {
    seal(plain, context) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', aesKey, iv);
      cipher.setAAD(Buffer.from(context));
      const body = Buffer.concat([cipher.update(plain), cipher.final()]);
      return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body]);
    },
    open(sealed, context) {
      if (sealed[0] !== VERSION || sealed.length < 29) throw new Error('not a sealed second-factor secret');
      const decipher = createDecipheriv('aes-256-gcm', aesKey, sealed.subarray(1, 13));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(sealed.subarray(13, 29));
      return Buffer.concat([decipher.update(sealed.subarray(29)), decipher.final()]);
    },
  };
}
