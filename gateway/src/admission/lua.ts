import { assetText } from '@platform/service-kit';

/**
 * A Lua file of the gateway by its path below `src/` (beside the module that owns it; `pnpm build` copies
 * every `src/**\/*.lua` beside the built modules), read once per process.
 */
export function luaFile(path: `${string}.lua`): string {
  return assetText(new URL(`../${path}`, import.meta.url));
}
