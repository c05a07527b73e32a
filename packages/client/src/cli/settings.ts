import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { ClientOptions } from '../client.ts';
import { type Environment, isEnvironment } from '../environments.ts';

/** Every flag of every command; parseArgs needs them all up front to be strict about typos. */
export const FLAGS = {
  env: { type: 'string' },
  'base-url': { type: 'string' },
  'risk-base-url': { type: 'string' },
  'key-id': { type: 'string' },
  secret: { type: 'string' },
  'private-key-file': { type: 'string' },
  'token-file': { type: 'string' },
  output: { type: 'string', short: 'o' },
  help: { type: 'boolean', short: 'h' },
  password: { type: 'string' },
  code: { type: 'string' },
  'recovery-code': { type: 'string' },
  limit: { type: 'string' },
  data: { type: 'string' },
  username: { type: 'string' },
  'first-name': { type: 'string' },
  'mid-name': { type: 'string' },
  'last-name': { type: 'string' },
  locale: { type: 'string' },
  timezone: { type: 'string' },
  roles: { type: 'string' },
  status: { type: 'string' },
  type: { type: 'string' },
  plan: { type: 'string' },
  phone: { type: 'string' },
  location: { type: 'string' },
  company: { type: 'string' },
  industry: { type: 'string' },
  'picture-url': { type: 'string' },
  q: { type: 'string' },
  role: { type: 'string' },
  cursor: { type: 'string' },
  all: { type: 'boolean' },
  subject: { type: 'string' },
  actor: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  'user-id': { type: 'string' },
} as const;

/** The parsed command line. */
export type Flags = ReturnType<typeof parseCommandLine>['values'];

/** Parses argv strictly: an unknown flag is a usage error, not silently ignored. */
export function parseCommandLine(argv: string[]) {
  return parseArgs({ args: argv, options: FLAGS, allowPositionals: true, strict: true });
}

/** A mistake on the command line; printed with the usage, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Where the CLI talks to and how it prints. */
export interface Settings {
  env: Environment;
  output: 'json' | 'table';
  tokenFile: string;
  client: Omit<ClientOptions, 'tokens' | 'onTokens'>;
}

/** Local defaults of CONTRACT.md part 9, so `pnpm cli` works against `pnpm start` with no setup. */
const LOCAL_KEY = { keyId: 'local-dev', secret: 'local-dev-secret' };

/** `$XDG_CONFIG_HOME/identity-risk-platform/<env>.json`, `~/.config/…` by default. */
export function defaultTokenFile(env: Environment, vars: NodeJS.ProcessEnv): string {
  return join(vars.XDG_CONFIG_HOME || join(homedir(), '.config'), 'identity-risk-platform', `${env}.json`);
}

/** Resolves flags, then environment variables, then the local defaults. */
export function resolveSettings(flags: Flags, vars: NodeJS.ProcessEnv): Settings {
  const env = flags.env ?? vars.PLATFORM_ENV ?? 'local';
  if (!isEnvironment(env)) throw new UsageError(`--env must be local, test or prod, not ${env}`);
  const output = flags.output ?? 'json';
  if (output !== 'json' && output !== 'table') throw new UsageError(`--output must be json or table, not ${output}`);
  const keyId = flags['key-id'] ?? vars.PLATFORM_KEY_ID ?? (env === 'local' ? LOCAL_KEY.keyId : undefined);
  if (keyId === undefined) throw new UsageError(`--key-id (or PLATFORM_KEY_ID) is required in ${env}`);
  const privateKeyFile = flags['private-key-file'] ?? vars.PLATFORM_PRIVATE_KEY_FILE;
  const secret = flags.secret ?? vars.PLATFORM_KEY_SECRET ?? (env === 'local' && privateKeyFile === undefined ? LOCAL_KEY.secret : undefined);
  let key: ClientOptions['key'];
  if (privateKeyFile !== undefined) key = { alg: 'ed25519', privateKey: readFileSync(privateKeyFile, 'utf8') };
  else if (secret !== undefined) key = { alg: 'hmac-sha256', secret };
  else throw new UsageError(`--secret (or PLATFORM_KEY_SECRET) or --private-key-file is required in ${env}`);
  return {
    env,
    output,
    tokenFile: flags['token-file'] ?? vars.PLATFORM_TOKEN_FILE ?? defaultTokenFile(env, vars),
    client: {
      env,
      baseUrl: flags['base-url'] ?? vars.PLATFORM_BASE_URL,
      riskBaseUrl: flags['risk-base-url'] ?? vars.PLATFORM_RISK_BASE_URL,
      keyId,
      key,
    },
  };
}
