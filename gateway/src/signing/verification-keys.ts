import { type KeyObject, createPublicKey, createSecretKey } from 'node:crypto';
import type { ClientKey } from './client-keys.ts';

/** A client key ready to verify with: the key object is made once, at start, never per request. */
export interface VerificationKey {
  keyId: string;
  alg: ClientKey['alg'];
  key: KeyObject;
  /** Epoch ms from which its signatures are refused (CONTRACT.md part 12). */
  notAfter: number | undefined;
  /** May call the introspection endpoint (CONTRACT.md part 16); false when absent. */
  introspection?: boolean;
}

/** Where the verifier finds a key by id: a map made once, or the live set of a watched file. */
export interface KeyLookup {
  get(keyId: string): VerificationKey | undefined;
}

/** Key objects for the configured client keys, by key id. HMAC secrets are the UTF-8 bytes of the text. */
export function verificationKeys(keys: readonly ClientKey[]): ReadonlyMap<string, VerificationKey> {
  return new Map(
    keys.map((k): [string, VerificationKey] => [
      k.keyId,
      {
        keyId: k.keyId,
        alg: k.alg,
        key: k.alg === 'hmac-sha256' ? createSecretKey(Buffer.from(k.secret, 'utf8')) : createPublicKey(k.publicKey),
        notAfter: k.notAfter,
        introspection: k.introspection === true,
      },
    ]),
  );
}
