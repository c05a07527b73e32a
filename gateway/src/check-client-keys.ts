// `pnpm --filter @platform/gateway check-keys <file>` (or `node dist/src/check-client-keys.js <file>` in the
// image): checks a client keys file as the gateway would read it, before it is applied (docs/deploy.md: client key
// runbook). Prints each key id with its algorithm and notAfter, or why the file would be refused; never a secret.
import { readFile } from 'node:fs/promises';
import { parseClientKeys } from './signing/client-keys.ts';

const path = process.argv[2];
if (path === undefined) {
  process.stderr.write('usage: check-client-keys <file>\n');
  process.exit(2);
}
try {
  const keys = parseClientKeys(await readFile(path, 'utf8'));
  for (const key of keys) {
    const notAfter = key.notAfter === undefined ? '' : ` notAfter ${new Date(key.notAfter).toISOString()}${key.notAfter <= Date.now() ? ' (already retired)' : ''}`;
    process.stdout.write(`${key.keyId} ${key.alg}${notAfter}\n`);
  }
} catch (err) {
  process.stderr.write(`${path}: ${err instanceof Error ? err.message : String(err)}: the gateway would keep its last valid keys\n`);
  process.exit(1);
}
