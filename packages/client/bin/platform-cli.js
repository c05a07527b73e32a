#!/usr/bin/env node
// `platform-cli`, the operators' command-line client: runs the compiled CLI (`pnpm build` writes dist/cli.js).
// A committed file of its own, so that pnpm can link the command on a fresh clone, before anything is built
// (a bin pointing into dist/ made every fresh `pnpm install` warn `Failed to create bin`).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const cli = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(fileURLToPath(cli))) {
  process.stderr.write('platform-cli is not built yet: run `pnpm build` first, or `pnpm cli …`, which runs the sources\n');
  process.exit(1);
}
await import(cli.href);
