// No secret value in the deployment files: Secrets are created outside the repository and only
// referenced. Flags what looks like one: private keys, passwords in URLs, values given to secret-named
// variables, Secret objects with data, and long random-looking tokens.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { DEPLOYABLES } from './deployables.ts';

/** The deployment files of a tree: everything under deploy/, docker-compose.yml and .dockerignore. */
export function deploymentFiles(root: string): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)]));
  return [...walk(join(root, 'deploy')), join(root, 'docker-compose.yml'), join(root, '.dockerignore')];
}

const SECRET_NAME = /^[A-Z0-9_]*(PASSWORD|SECRET|TOKEN|PRIVATE_KEY|HMAC_KEY|CLIENT_KEYS|API_KEY)[A-Z0-9_]*$/;
// What config.ts marks secret is secret, and what it reads unmarked is not (PASSWORD_HASH_THREADS);
// names no config reads are judged by their look.
const SPEC_SECRETS = new Map(DEPLOYABLES.flatMap((d) => Object.entries(d.spec).map(([name, field]) => [name, field.secret === true] as const)));
const isSecretName = (name: string) => SPEC_SECRETS.get(name) ?? SECRET_NAME.test(name);
const ASSIGNMENT = /^\s*-?\s*["']?([A-Za-z0-9_]+)["']?\s*[:=]\s*(.*)$/;
const CHECKS: Array<[RegExp, string]> = [
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----/, 'a private key'],
  [/[a-z][a-z0-9+.-]*:\/\/[^\s:@/]+:[^\s@/]+@/i, 'a URL with a password'],
  // Mixed case and digits, 32 characters or more: the shape of generated keys and tokens.
  [/(?=[A-Za-z0-9+_-]*\d)(?=[A-Za-z0-9+_-]*[A-Z])(?=[A-Za-z0-9+_-]*[a-z])[A-Za-z0-9+_-]{32,}={0,2}/, 'a random-looking token'],
];

/** One line per place that looks like a committed secret value. */
export function secretProblems(root: string): string[] {
  const problems: string[] = [];
  for (const file of deploymentFiles(root)) {
    const where = relative(root, file);
    const text = readFileSync(file, 'utf8');
    text.split('\n').forEach((line, i) => {
      if (line.trimStart().startsWith('#')) return;
      for (const [pattern, what] of CHECKS) if (pattern.test(line)) problems.push(`${where}:${i + 1}: ${what}`);
      const [, name, value] = ASSIGNMENT.exec(line) ?? [];
      const given = (value ?? '').trim().replace(/^["']|["']$/g, '');
      // A URL is judged by the password check above: without one it names a server, not a secret.
      if (name !== undefined && isSecretName(name) && !['', 'null', '~'].includes(given) && !URL.canParse(given)) {
        problems.push(`${where}:${i + 1}: ${name} is given a value; secrets come from Secrets`);
      }
    });
    if (!/\.ya?ml$/.test(file)) continue;
    for (const doc of parseAllDocuments(text)) {
      const object = doc.toJSON() as { kind?: string; data?: unknown; stringData?: unknown; metadata?: { name?: string } } | null;
      if (object?.kind === 'Secret' && (object.data !== undefined || object.stringData !== undefined)) {
        problems.push(`${where}: Secret ${object.metadata?.name ?? ''} carries values; create it outside the repository`);
      }
    }
  }
  return problems;
}
