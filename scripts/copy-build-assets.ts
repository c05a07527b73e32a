// `pnpm build`, after tsc: the files a package reads at run time beside its modules that tsc does not
// emit (Lua scripts), copied from each package's src/ into its dist/ at the same place, so the built
// package (and every image made from it) finds them where the sources do.
import { cpSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** File endings of run-time assets. */
const ASSETS = ['.lua'];
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const json = (path: string): Record<string, unknown> => JSON.parse(readFileSync(join(root, path), 'utf8')) as Record<string, unknown>;
/** Every workspace package that tsc builds: tsconfig.build.json's references. */
const PACKAGES = (json('tsconfig.build.json').references as Array<{ path: string }>).map((reference) => reference.path);

function* assetsBelow(folder: string): Generator<string> {
  for (const name of readdirSync(folder)) {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) yield* assetsBelow(path);
    else if (ASSETS.some((ending) => name.endsWith(ending))) yield path;
  }
}

let copied = 0;
for (const pkg of PACKAGES) {
  const src = join(root, pkg, 'src');
  // Where tsc puts src/x.ts is where src/x.lua goes: outDir + the file's path below rootDir.
  const { rootDir, outDir } = json(join(pkg, 'tsconfig.json')).compilerOptions as { rootDir: string; outDir: string };
  for (const asset of assetsBelow(src)) {
    cpSync(asset, join(root, pkg, outDir, relative(join(root, pkg, rootDir), asset)));
    copied++;
  }
}
console.log(`copied ${copied} run-time asset(s) into dist/`);
