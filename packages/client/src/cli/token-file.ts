import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { AuthenticationResult } from '../types.ts';

/** The tokens saved by `login`, or undefined when there is no file. */
export function readTokens(path: string): AuthenticationResult | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const value = JSON.parse(text) as Partial<AuthenticationResult>;
  if (typeof value.accessToken !== 'string' || typeof value.refreshToken !== 'string') throw new Error(`${path} holds no tokens; log in again`);
  return value as AuthenticationResult;
}

/**
 * Saves the tokens readable by the owner only (0600, directory 0700). Written to a temporary file and
 * renamed, so a crash never leaves half a file, and the mode holds even when the file existed before.
 */
export function writeTokens(path: string, tokens: AuthenticationResult | undefined): void {
  if (tokens === undefined) {
    rmSync(path, { force: true });
    return;
  }
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(tokens, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, path);
}
