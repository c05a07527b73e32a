import { request } from 'node:http';
import type { Answer } from '../../../gateway/test/support/gateway-harness.ts';

export type { Answer } from '../../../gateway/test/support/gateway-harness.ts';

/**
 * Sends one request with exactly this target, headers and body on a fresh connection. Unlike passing a
 * URL string to node:http, the target is not normalised (`%2e%2e` and `//` reach the server as written).
 */
export function sendRaw(base: string, method: string, target: string, headers: Record<string, string> = {}, body?: Buffer): Promise<Answer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, method, path: target, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const buffer = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: buffer, json: () => JSON.parse(buffer.toString('utf8')) as Record<string, unknown> });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
