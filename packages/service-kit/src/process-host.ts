import type { Redis } from 'ioredis';
import type { RedisOptions } from './redis.ts';

/**
 * What a process hosting several deployables changes in their composition roots. Only the embedded
 * fallback of `pnpm start` (packages/embedded) installs one: it imports gateway, identity and risk into
 * one process, so they must share one in-process Redis stand-in, and the process may end only after the
 * last of them has stopped (then it closes the embedded database). Uninstalled, nothing changes.
 */
export interface ProcessHost {
  /** Handed out by `createRedis` instead of a connected client. */
  redis?: (options: RedisOptions) => Redis;
  /** Called instead of `process.exit(code)` once one deployable has drained and closed. */
  exit?: (service: string, code: number) => void;
}

let installed: ProcessHost = {};

/** Installs the host; call it before importing the composition roots. */
export function installProcessHost(host: ProcessHost): void {
  installed = host;
}

/** The installed host; empty in a process that runs one deployable, i.e. everywhere but the embedded stack. */
export function processHost(): ProcessHost {
  return installed;
}
