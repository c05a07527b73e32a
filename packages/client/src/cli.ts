#!/usr/bin/env node
// The operators' command-line client over the SDK: `pnpm cli stations cities`. See `pnpm cli --help`.
import { run } from './cli/run.ts';

process.exitCode = await run(process.argv.slice(2), process.env);
