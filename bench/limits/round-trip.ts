// Limit G bare: a cached hit's input and output and nothing else. A plain node:http server reads the
// request, makes the gateway's admission (@platform/gateway/engine: one script in Redis claiming a fresh
// nonce and idempotency key and counting the key's rate; no token, no revocation read) and writes station
// 17130's answer from memory. No signature, no bearer token, no envelope, no log line: less than a hit
// must do (CONTRACT.md part 17: every check first, and a hit spends its nonce and quota), so no hit can
// cost less. Beside limit C at one pace it shows how much of limit C's cost per answer any hit pays, its
// JavaScript aside: the same wake-ups and system calls (the client's request, one round trip, the answer).
// Usage: node bench/limits/round-trip.ts --port <port> --redis-url <url> --redis-prefix <prefix>
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { createRevocationReader } from '@platform/auth';
import { createAdmissionStore } from '@platform/gateway/engine';
import { createLogger, createRedis, waitForRedis } from '@platform/service-kit';
import { RATE, STATION_JSON, answeredHealth, limitOptions, listen, refuse } from './common.ts';

const options = limitOptions('round-trip', ['redisUrl', 'redisPrefix']);
const logger = createLogger({ service: 'limit-g-bare', level: 'silent' });
const redis = createRedis({ url: options.redisUrl, keyPrefix: options.redisPrefix, logger, autoPipelining: false });
const KEY_ID = 'limit-g-bare';
const store = createAdmissionStore(redis, { nonceTtlS: 600, safeTtlS: 86_400, unsafeTtlS: 86_400, revocations: createRevocationReader(redis, { logger }), keyIds: () => [KEY_ID] });
// As the gateway's start dates its client keys (`prepare`): the key's ledger is dated before it listens, and
// its requests are "signed" from the next whole second on (one signed in the ledger's first second is refused).
await waitForRedis(redis, 10_000);
const born = await store.dateKeys();
if (born > 0) await new Promise((resolve) => setTimeout(resolve, 1000 - (born % 1000)));
const HEAD = { 'content-type': 'application/json; charset=utf-8', 'content-length': STATION_JSON.length, 'x-cache': 'HIT', age: '0' };

const server = createServer((req, res) => {
  if (answeredHealth(req, res)) return;
  req.resume();
  const owner = randomUUID();
  store
    .admit({ keyId: KEY_ID, nonce: owner, idempotencyKey: owner, method: req.method ?? 'GET', token: undefined, bearing: false, created: Math.floor(Date.now() / 1000), owner, rate: RATE })
    .then((admission) => {
      if (admission.outcome !== 'claimed') return refuse(res, admission.outcome === 'rate-limited' ? 429 : 409);
      res.writeHead(200, HEAD).end(STATION_JSON);
    })
    .catch(() => refuse(res, 503));
});
listen(server, options.port);
