import { readFileSync } from 'node:fs';

const loaded = new Map<string, string>();

/**
 * A Lua file of the gateway by its path below `src/` (beside the module that owns it; `pnpm build` copies
 * every `src/**\/*.lua` beside the built modules), read once per process.
 */
export function luaFile(path: `${string}.lua`): string {
  let text = loaded.get(path);
  if (text === undefined) {
    text = readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');
    loaded.set(path, text);
  }
  return text;
}
