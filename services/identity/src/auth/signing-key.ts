import { type JsonWebKey, type KeyObject, createHash, createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Jwks } from '@platform/auth';

/** The key that signs access tokens, with everything derived from it once. */
export interface SigningKey {
  kid: string;
  algorithm: 'ES256' | 'RS256';
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** The public half as published in the JWKS. */
  jwk: JsonWebKey & { kid: string; alg: string; use: 'sig' };
}

/** RFC 7638 thumbprint: a `kid` that names the key itself, so every replica with the same key agrees. */
function thumbprint(jwk: JsonWebKey): string {
  const members = jwk.kty === 'EC' ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y } : { e: jwk.e, kty: jwk.kty, n: jwk.n };
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url');
}

/** Reads a PEM private key: a P-256 EC key signs ES256, an RSA key of at least 2048 bits RS256. */
export function signingKeyFromPem(pem: string): SigningKey {
  const privateKey = createPrivateKey(pem);
  let algorithm: SigningKey['algorithm'];
  if (privateKey.asymmetricKeyType === 'ec' && privateKey.asymmetricKeyDetails?.namedCurve === 'prime256v1') {
    algorithm = 'ES256';
  } else if (privateKey.asymmetricKeyType === 'rsa' && (privateKey.asymmetricKeyDetails?.modulusLength ?? 0) >= 2048) {
    algorithm = 'RS256';
  } else {
    throw new Error('JWT_PRIVATE_KEY must be a P-256 EC key or an RSA key of at least 2048 bits');
  }
  const publicKey = createPublicKey(privateKey);
  const publicJwk = publicKey.export({ format: 'jwk' });
  const kid = thumbprint(publicJwk);
  return { kid, algorithm, privateKey, publicKey, jwk: { ...publicJwk, kid, alg: algorithm, use: 'sig' } };
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

/** The JWKS document of the given keys. */
export function jwksOf(keys: readonly SigningKey[]): Jwks {
  return { keys: keys.map((key) => key.jwk) };
}
