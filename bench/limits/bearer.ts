// Limit F: limit B behind what a direct call to risk must do before it answers (CONTRACT.md parts 4 and
// 10): the bearer token verified as risk verifies it, @platform/auth's verifier on identity's JWKS, and its
// revocations read in the stack's Redis, one round trip; no validator, logs, metrics or headers.
// Usage: node bench/limits/bearer.ts --port <port> --redis-url <url> --redis-prefix <prefix> --jwks-url <url> --issuer <origin>
import { listenBearerLimit } from './bearer-of.ts';
import { limitOptions } from './common.ts';

listenBearerLimit(limitOptions('bearer', ['redisUrl', 'redisPrefix', 'jwksUrl', 'issuer']), 'limit-f');
