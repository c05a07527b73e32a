import { type Answer, exchange } from '../../../gateway/test/support/gateway-harness.ts';

export type { Answer } from '../../../gateway/test/support/gateway-harness.ts';

/**
 * Sends one request with exactly this target, headers and body on a fresh connection. Unlike passing a
 * URL string to node:http, the target is not normalised (`%2e%2e` and `//` reach the server as written).
 */
export function sendRaw(base: string, method: string, target: string, headers: Record<string, string> = {}, body?: Buffer): Promise<Answer> {
  const { hostname, port } = new URL(base);
  return exchange(null, { hostname, port, method, path: target, headers }, body);
}
