import { type JsonWebKey, type KeyObject, createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { type Jwks, type TokenAlgorithm, algorithmOf } from '@platform/auth';
import { calculateJwkThumbprint, exportJWK } from 'jose';

/** A public key that verifies access tokens, with everything derived from it once. */
export interface VerificationKey {
  kid: string;
  algorithm: TokenAlgorithm;
  publicKey: KeyObject;
  /** The key as published in the JWKS. */
  jwk: JsonWebKey & { kid: string; alg: string; use: 'sig' };
}

/** The key that signs access tokens: a verification key and its private half. */
export interface SigningKey extends VerificationKey {
  privateKey: KeyObject;
}

const KEY_RULE = 'must be a P-256 EC key or an RSA key of at least 2048 bits';

/** The `kid` is the key's RFC 7638 thumbprint (SHA-256): it names the key itself, so every replica with the same key agrees. */
async function verificationKeyOf(publicKey: KeyObject, algorithm: VerificationKey['algorithm']): Promise<VerificationKey> {
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk, 'sha256');
  return { kid, algorithm, publicKey, jwk: { ...publicJwk, kid, alg: algorithm, use: 'sig' } };
}

/** Reads a PEM private key: a P-256 EC key signs ES256, an RSA key of at least 2048 bits RS256. */
export async function signingKeyFromPem(pem: string): Promise<SigningKey> {
  const privateKey = createPrivateKey(pem);
  const algorithm = algorithmOf(privateKey);
  if (algorithm === undefined) throw new Error(`JWT_PRIVATE_KEY ${KEY_RULE}`);
  return { ...(await verificationKeyOf(createPublicKey(privateKey), algorithm)), privateKey };
}

/** A PEM public key of the kinds `signingKeyFromPem` takes, and the algorithm it verifies; throws KEY_RULE for another kind. */
function publicKeyFromPem(pem: string): { publicKey: KeyObject; algorithm: VerificationKey['algorithm'] } {
  const publicKey = createPublicKey(pem);
  const algorithm = algorithmOf(publicKey);
  if (algorithm === undefined) throw new Error(KEY_RULE);
  return { publicKey, algorithm };
}

/** Reads a PEM public key of the same kinds as `signingKeyFromPem`'s. */
export async function verificationKeyFromPem(pem: string): Promise<VerificationKey> {
  const { publicKey, algorithm } = publicKeyFromPem(pem);
  return verificationKeyOf(publicKey, algorithm);
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;

/**
 * Splits concatenated PEM public keys (JWT_PREVIOUS_PUBLIC_KEYS) into one PEM each and checks every one.
 * Only public keys are taken: a retired private key has no business in the configuration any more.
 * Throws an Error saying which block is wrong; an empty text is no keys.
 */
export function publicKeyPemsOf(text: string): string[] {
  const pems: string[] = [];
  for (const match of text.matchAll(PEM_BLOCK)) {
    const label = match[1] ?? '';
    const position = `block ${pems.length + 1}`;
    if (label !== 'PUBLIC KEY' && label !== 'RSA PUBLIC KEY') {
      throw new Error(`${position} is a ${label}; only PEM public keys (BEGIN PUBLIC KEY) belong here, never a private key`);
    }
    try {
      publicKeyFromPem(match[0]);
    } catch (err) {
      throw new Error(`${position}: ${err instanceof Error && err.message === KEY_RULE ? KEY_RULE : 'is not a readable public key'}`);
    }
    pems.push(match[0]);
  }
  if (text.replace(PEM_BLOCK, '').trim() !== '') throw new Error('holds text outside PEM blocks; concatenate PEM public keys only');
  return pems;
}

/** A fresh P-256 key as PEM. */
export function generateSigningKeyPem(): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
}

/**
 * Local only: the key kept in `path`, made on first start, so tokens survive a restart of `pnpm start`.
 * The file is readable by its owner only.
 */
export async function loadOrCreateLocalKeyPem(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const pem = generateSigningKeyPem();
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, pem, { mode: 0o600, flag: 'wx' }).catch(async (err: NodeJS.ErrnoException) => {
    // Two processes starting at once: the first file wins and both use it.
    if (err.code !== 'EEXIST') throw err;
  });
  await chmod(path, 0o600);
  return readFile(path, 'utf8');
}

/** The keys without repeats of a `kid` (a previous key listed twice, or the current key listed as previous too). */
export function distinctKeys(keys: readonly VerificationKey[]): VerificationKey[] {
  return [...new Map(keys.map((key) => [key.kid, key])).values()];
}

/** The JWKS document of the given keys. */
export function jwksOf(keys: readonly VerificationKey[]): Jwks {
  return { keys: distinctKeys(keys).map((key) => key.jwk) };
}
