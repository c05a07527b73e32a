import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The directory of the nearest package.json above a module: the same answer whether the module runs
 * from `src/` as TypeScript or from `dist/` as compiled output, so files beside the package
 * (openapi.yaml, data/) are found in both.
 */
export function packageRoot(moduleUrl: string): string {
  let dir = dirname(fileURLToPath(moduleUrl));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${moduleUrl}`);
    dir = parent;
  }
  return dir;
}

/** A URL with its password removed, for logs: `postgres://app:***@db:5432/identity`. Non-URLs pass unchanged. */
export function safeUrl(url: string): string {
  if (!URL.canParse(url)) return url;
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}
