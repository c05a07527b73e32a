import { assetText } from '@platform/service-kit';

/** The Lua of this module, by file name (without `.lua`), read once per process. */
export type LuaFile = 'mirror-state' | 'stamp-check' | 'mirror-read' | 'mirror-close' | 'mirror-open' | 'is-revoked' | 'bucket-check';

/** One file of `lua/` (beside this module in the sources, copied beside it into `dist/` by the build), read once. */
export function luaFile(name: LuaFile): string {
  return assetText(new URL(`./lua/${name}.lua`, import.meta.url));
}

/**
 * A script for `defineCommand`: the named functions it calls (`mirror_state`, `stamp_check`) first, its
 * body last. Redis runs a script as one chunk, so a script's library is its own first lines.
 */
export function luaScript(...files: LuaFile[]): string {
  return files.map(luaFile).join('\n');
}
