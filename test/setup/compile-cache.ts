// Required by mocha in every test process (.mocharc.yml, .mocharc.cluster.yml): Node's module compile cache
// (each module's V8 code cache and a TypeScript module's stripped text, on disk in the system's temporary
// directory), which @platform/stack hands on to every process it starts. A run starts a few hundred
// processes of the same sources, and loading them from the cache costs about half the CPU.
import { enableCompileCache } from 'node:module';

enableCompileCache();
