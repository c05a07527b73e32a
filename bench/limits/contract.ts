// Limit D: the least a gateway can do and keep CONTRACT.md's per-request promises: a bare Express 5 app
// that reads the body, checks the SDK's HMAC signature and Content-Digest, claims the nonce in one Redis
// round trip and forwards over kept-alive connections with node:http; no logs, metrics, rate limit,
// revocations or idempotency keys.
// Usage: node bench/limits/contract.ts --port <port> --target <origin> --redis-url <url> --key-secret <secret>
import { createSecretKey } from 'node:crypto';
import { Redis } from 'ioredis';
import { checkSignature, expressLimit, limitOptions, listen, nodeForwarder, refuse } from './common.ts';

const options = limitOptions('contract', ['target', 'redisUrl', 'keySecret']);
const key = createSecretKey(Buffer.from(options.keySecret, 'utf8'));
const redis = new Redis(options.redisUrl, { enableAutoPipelining: false, maxRetriesPerRequest: 1 });
const forward = nodeForwarder(options.target);
const server = expressLimit(async (req, res, body) => {
  const signed = checkSignature(req, body, key);
  if (typeof signed === 'number') return refuse(res, signed);
  if ((await redis.set(`limit-d:nonce:${signed.keyId}:${signed.nonce}`, '1', 'PX', 300_000, 'NX')) === null) return refuse(res, 409);
  forward(req, res, body);
});
listen(server, options.port);
