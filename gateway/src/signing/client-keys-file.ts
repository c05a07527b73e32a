import { readFile } from 'node:fs/promises';
import { type Logger, periodic } from '@platform/service-kit';
import { parseClientKeys } from './client-keys.ts';
import { type KeyLookup, type VerificationKey, verificationKeys } from './verification-keys.ts';

/**
 * How often the file is read. CONTRACT.md part 12 allows 5 s from a change to its use; a second leaves
 * room for a slow disk, and reading a few kilobytes a second costs nothing. Polling rather than fs.watch:
 * a Kubernetes Secret volume changes by swapping a symlinked directory, which watchers miss.
 */
const POLL_MS = 1000;

/** What the gateway reports about each read of the file that changed something (metrics). */
export type ReloadOutcome = 'applied' | 'invalid' | 'unreadable';

/** The live client keys of GATEWAY_CLIENT_KEYS_FILE. */
export interface ClientKeysFile {
  keys: KeyLookup;
  /** The key ids in use, for the start line. */
  keyIds(): string[];
  close(): void;
}

export interface ClientKeysFileOptions {
  path: string;
  logger: Logger;
  onReload?: (outcome: ReloadOutcome) => void;
  /**
   * After every read: whether the file holds the keys in use (false while it is invalid or unreadable).
   * A state, not a change, so that what watches it sees a bad file for as long as it stays bad.
   */
  onRead?: (valid: boolean) => void;
}

const reasonOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * Reads GATEWAY_CLIENT_KEYS_FILE (the JSON of GATEWAY_CLIENT_KEYS) and re-reads it every second: a new
 * valid content replaces the keys at once, without a restart; an invalid or unreadable one is logged
 * (once per content, never with a secret) and the last valid set stays in use. Rejects when the file
 * is not valid at start, so the gateway refuses to start rather than serve without keys.
 */
export async function watchClientKeysFile(options: ClientKeysFileOptions): Promise<ClientKeysFile> {
  let text = await readFile(options.path, 'utf8');
  let current: ReadonlyMap<string, VerificationKey> = verificationKeys(parseClientKeys(text));
  let lastProblem: string | undefined;
  const report = (outcome: ReloadOutcome, problem: string) => {
    options.onRead?.(false);
    if (problem === lastProblem) return;
    lastProblem = problem;
    options.onReload?.(outcome);
    options.logger.error({ path: options.path, reason: problem, keyIds: [...current.keys()] }, 'GATEWAY_CLIENT_KEYS_FILE is not usable; keeping the last valid client keys');
  };
  const poll = async () => {
    let next: string;
    try {
      next = await readFile(options.path, 'utf8');
    } catch (err) {
      report('unreadable', reasonOf(err));
      return;
    }
    if (next === text) {
      lastProblem = undefined;
      options.onRead?.(true);
      return;
    }
    try {
      const keys = verificationKeys(parseClientKeys(next));
      current = keys;
      text = next;
      lastProblem = undefined;
      options.onReload?.('applied');
      options.onRead?.(true);
      options.logger.info({ path: options.path, keyIds: [...keys.keys()] }, 'client keys reloaded from GATEWAY_CLIENT_KEYS_FILE');
    } catch (err) {
      report('invalid', reasonOf(err));
    }
  };
  // One read at a time: a slow disk must not stack reads up. `poll` handles its own failures.
  const polls = periodic(poll, {
    intervalMs: POLL_MS,
    onError: (err) => options.logger.error({ err, path: options.path }, 'GATEWAY_CLIENT_KEYS_FILE could not be checked'),
  });
  polls.start();
  return {
    keys: { get: (keyId) => current.get(keyId) },
    keyIds: () => [...current.keys()],
    close: () => void polls.stop(),
  };
}
