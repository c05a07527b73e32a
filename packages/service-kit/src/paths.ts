import { existsSync, readFileSync } from 'node:fs';
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

const assets = new Map<string, string>();

/**
 * The text of a file a module reads beside itself at run time (`new URL('./x.lua', import.meta.url)`), read
 * once per process: in the sources, and in `dist/` where `pnpm build` copies such files
 * (scripts/copy-build-assets.ts).
 */
export function assetText(url: URL): string {
  let text = assets.get(url.href);
  if (text === undefined) {
    text = readFileSync(url, 'utf8');
    assets.set(url.href, text);
  }
  return text;
}

/** A URL with its password removed, for logs: `postgres://app:***@db:5432/identity`. Non-URLs pass unchanged. */
export function safeUrl(url: string): string {
  if (!URL.canParse(url)) return url;
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}
