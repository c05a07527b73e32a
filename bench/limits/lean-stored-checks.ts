// Limit G′: limit G's work with none of the gateway's, service-kit's or @platform/auth's code on a request's
// path: what a cached hit would cost written as leanly as this file can, so that a floor claimed beside limit
// G (which runs those packages' admission store, token verifier and request envelope) can be checked.
// - The same work: the SDK's signature checked as limits E′ and G check it (common.ts); the bearer token
//   (ES256 or RS256 against identity's JWKS, `iss`, `aud`, `exp`), each token verified once and then found in
//   a Map as the gateway's verifier finds it; the revocation check and the gateway's admission script, the
//   very Lua the gateway runs on one Redis (@platform/gateway/engine's ADMIT_CHECKED_SCRIPT: both in one
//   script) on the same keys and arguments: one command, one round trip, the commands of one event-loop turn
//   in one socket write (as the gateway's); the gateway's per-request output: a request id, X-Request-Id and
//   the security headers, a deadline armed and cleared, a trace id, one access line on stdout (held 10 ms, as
//   service-kit's logger holds it), the request counted and timed in the metrics, the quota headers; station
//   17130's answer from memory.
// - Written here instead: RESP over one node:net socket (no ioredis), the token cache, the envelope and the
//   metrics (plain numbers, no prom-client), the line (a template, no pino). Only the scripts' text and
//   the key names' shape are the packages' (the keys must be the gateway's for the scripts to do its work).
// - Left out: what keeps a gateway right under faults and changes, which costs a hit nothing until they
//   happen (reconnects and the topology, a NOSCRIPT reload, the signed-ahead memory, the key watch, key
//   rotation); a refusal is its bare status (common.ts, `refuse`).
// Usage: node bench/limits/lean-stored-checks.ts --port <port> --redis-url <url> --key-secret <secret> --redis-prefix <prefix> --jwks-url <url> --issuer <origin>
import { type KeyObject, createPublicKey, createSecretKey, randomUUID, verify } from 'node:crypto';
import { writeSync } from 'node:fs';
import { type ServerResponse, createServer } from 'node:http';
import { connect } from 'node:net';
import { ADMIT_CHECKED_SCRIPT } from '@platform/gateway/engine';
import { AUDIENCE, RATE, STATION_JSON, answeredHealth, bodyOf, checkSignature, limitOptions, listen, refuse } from './common.ts';

const options = limitOptions('lean-stored-checks', ['redisUrl', 'keySecret', 'redisPrefix', 'jwksUrl', 'issuer']);
const secret = createSecretKey(Buffer.from(options.keySecret, 'utf8'));
const prefix = options.redisPrefix;

// --- RESP over one socket: commands written as one string, replies taken in order.
type Reply = string | number | null | Error | Reply[];
const redisUrl = new URL(options.redisUrl);
const socket = connect({ host: redisUrl.hostname, port: Number(redisUrl.port || 6379), noDelay: true });
const waiting: Array<(reply: Reply) => void> = [];
let pending: Buffer | undefined;

/** One reply from `buf` at `at`: the reply and where the next starts, or undefined when not all of it is here. */
function parse(buf: Buffer, at: number): [Reply, number] | undefined {
  const end = buf.indexOf('\r\n', at);
  if (end === -1) return undefined;
  const type = buf[at];
  const line = buf.toString('latin1', at + 1, end);
  if (type === 0x2b) return [line, end + 2];
  if (type === 0x2d) return [new Error(line), end + 2];
  if (type === 0x3a) return [Number(line), end + 2];
  if (type === 0x24) {
    const length = Number(line);
    if (length < 0) return [null, end + 2];
    if (buf.length < end + 2 + length + 2) return undefined;
    return [buf.toString('utf8', end + 2, end + 2 + length), end + 4 + length];
  }
  if (type === 0x2a) {
    const count = Number(line);
    const items: Reply[] = [];
    let next = end + 2;
    for (let i = 0; i < count; i += 1) {
      const item = parse(buf, next);
      if (item === undefined) return undefined;
      items.push(item[0]);
      next = item[1];
    }
    return [items, next];
  }
  throw new Error(`unexpected RESP type ${String(type)}`);
}

socket.on('data', (chunk: Buffer) => {
  const buf = pending === undefined ? chunk : Buffer.concat([pending, chunk]);
  let at = 0;
  for (;;) {
    const reply = at < buf.length ? parse(buf, at) : undefined;
    if (reply === undefined) break;
    at = reply[1];
    waiting.shift()?.(reply[0]);
  }
  pending = at < buf.length ? buf.subarray(at) : undefined;
});
socket.on('error', (err) => {
  process.stderr.write(`limit G′: Redis: ${err.message}\n`);
  process.exit(1);
});

/** A command in RESP. */
function command(args: readonly string[]): string {
  let text = `*${args.length}\r\n`;
  for (const arg of args) text += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
  return text;
}

/** Whether the socket holds its writes until the end of this event-loop turn (as the gateway's `turnWrites`). */
let corked = false;
const uncork = (): void => {
  corked = false;
  socket.uncork();
};

/** Writes commands with every other of this event-loop turn (one write at its end) and resolves with their replies. */
function send(commands: readonly (readonly string[])[]): Promise<Reply[]> {
  if (!corked) {
    corked = true;
    socket.cork();
    setImmediate(uncork);
  }
  return new Promise((resolve) => {
    const replies: Reply[] = [];
    for (const _ of commands) {
      waiting.push((reply) => {
        replies.push(reply);
        if (replies.length === commands.length) resolve(replies);
      });
    }
    socket.write(commands.map(command).join(''));
  });
}

const [admitSha] = (await send([['SCRIPT', 'LOAD', ADMIT_CHECKED_SCRIPT]])) as [string];

// --- The bearer token: verified once against identity's JWKS, then found in a Map until it expires.
interface Claims {
  exp: number;
  sid: string;
  jti: string;
}
const jwks = (await (await fetch(options.jwksUrl)).json()) as { keys: Array<Record<string, string>> };
const keys = new Map<string, { key: KeyObject; alg: string }>(jwks.keys.map((jwk) => [jwk.kid ?? '', { key: createPublicKey({ key: jwk, format: 'jwk' }), alg: jwk.alg ?? '' }]));
const tokens = new Map<string, Claims>();
const json = (part: string): Record<string, unknown> => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;

function claimsOf(authorization: string | undefined): Claims | undefined {
  if (authorization === undefined || !authorization.startsWith('Bearer ')) return undefined;
  const token = authorization.slice(7);
  const now = Date.now() / 1000;
  const known = tokens.get(token);
  if (known !== undefined) return known.exp > now ? known : undefined;
  const [head, body, signature] = token.split('.');
  if (head === undefined || body === undefined || signature === undefined) return undefined;
  try {
    const header = json(head);
    const found = keys.get(String(header.kid));
    if (found === undefined || header.alg !== found.alg) return undefined;
    const signed = Buffer.from(`${head}.${body}`);
    const key = found.alg === 'ES256' ? { key: found.key, dsaEncoding: 'ieee-p1363' as const } : found.key;
    if (!verify('sha256', signed, key, Buffer.from(signature, 'base64url'))) return undefined;
    const claims = json(body);
    const audience = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (claims.iss !== options.issuer || !audience.includes(AUDIENCE) || typeof claims.exp !== 'number' || claims.exp <= now) return undefined;
    if (typeof claims.sid !== 'string' || typeof claims.jti !== 'string' || typeof claims.sub !== 'string') return undefined;
    const verified = { exp: claims.exp, sid: claims.sid, jti: claims.jti };
    tokens.set(token, verified);
    return verified;
  } catch {
    return undefined;
  }
}

// --- The admission: the revocation check and the gateway's script, keys and arguments as the gateway makes them.
/** FNV-1a (32 bits) of the session id, as @platform/auth spreads sessions over its 64 buckets. */
function bucketOf(sessionId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < sessionId.length; i += 1) hash = Math.imul(hash ^ sessionId.charCodeAt(i), 0x01000193) >>> 0;
  return hash % 64;
}
const stampKey = randomUUID();
let stampSeen = 0;
let stampLast = 0;

async function admitted(keyId: string, nonce: string, idempotencyKey: string, method: string, created: number, claims: Claims): Promise<{ remaining: number; waitMs: number } | number> {
  const bucket = `${prefix}auth:{rv:${bucketOf(claims.sid)}}:`;
  const tag = `${prefix}gateway:{ck:${keyId}}:`;
  const now = Date.now();
  const [answer] = await send([
    [
      'EVALSHA', admitSha, '8', `${bucket}mirror`, `${bucket}token:${claims.jti}`, `${bucket}session:${claims.sid}`,
      `${tag}rate:${RATE.windowS}`, `${tag}nonce:${nonce}`, `${tag}idem:${idempotencyKey}`, `${tag}born`, `${tag}stamp:limit-g-lean:${stampKey}`,
      '600000', '86400000', randomUUID(), String(RATE.limit), String((RATE.windowS * 1000) / 10), String(created), String(now), String(stampSeen), String(stampLast), String(now),
    ],
  ]);
  if (!Array.isArray(answer) || typeof answer[0] !== 'number' || answer[0] < 0) return 503;
  const [revoked, outcome, remaining, waitMs, count] = answer as [number, string, number, number, number];
  if (count > stampSeen) {
    stampSeen = count;
    stampLast = Date.now();
  }
  if (outcome !== 'claimed') return outcome === 'rate-limited' ? 429 : outcome === 'nonce-reused' || outcome === 'key-reused' ? 409 : 503;
  return revoked > 0 ? 401 : { remaining, waitMs };
}

// --- The output: the access line held as service-kit's logger holds it, the metrics as plain numbers.
let held = '';
let hold: NodeJS.Timeout | undefined;
const handOver = (): void => {
  hold = undefined;
  const text = held;
  held = '';
  if (text !== '') writeSync(1, text);
};
process.once('exit', handOver);
function line(text: string): void {
  if (held.length + text.length > 4096) handOver();
  held += text;
  hold ??= setTimeout(handOver, 10).unref();
}
const BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const requests = new Map<string, { count: number; sum: number; buckets: number[] }>();
function observe(method: string, route: string, status: number, seconds: number): void {
  const name = `${method} ${route} ${status}`;
  let series = requests.get(name);
  if (series === undefined) requests.set(name, (series = { count: 0, sum: 0, buckets: BOUNDS.map(() => 0) }));
  series.count += 1;
  series.sum += seconds;
  for (let i = 0; i < BOUNDS.length; i += 1) if (seconds <= (BOUNDS[i] as number)) series.buckets[i] = (series.buckets[i] as number) + 1;
}
const routeOf = (url: string): string => (url.startsWith('/v1/weather-stations/by/id/') ? '/v1/weather-stations/by/id/{stationId}' : url.split('?')[0] ?? url);
const SECURITY = [
  ['X-Content-Type-Options', 'nosniff'],
  ['Cache-Control', 'no-store'],
  ['Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"],
  ['X-Frame-Options', 'DENY'],
  ['Referrer-Policy', 'no-referrer'],
  ['Cross-Origin-Opener-Policy', 'same-origin'],
].flat();
const POLICY = `"default";q=${RATE.limit};w=${RATE.windowS}`;
const late = (res: ServerResponse): void => {
  if (!res.headersSent) refuse(res, 503);
};

const server = createServer((req, res) => {
  if (answeredHealth(req, res)) return;
  const started = performance.now();
  const id = randomUUID();
  const traceId = randomUUID().replaceAll('-', '');
  const method = req.method ?? 'GET';
  const url = req.url ?? '/';
  const timer = setTimeout(late, 8000, res);
  res.once('close', () => {
    clearTimeout(timer);
    const elapsedMs = performance.now() - started;
    if (res.writableFinished) observe(method, routeOf(url), res.statusCode, elapsedMs / 1000);
    const status = res.statusCode;
    line(
      `{"level":"${status >= 400 ? 'warn' : 'info'}","time":"${new Date().toISOString()}","service":"limit-g-lean","req":{"id":"${id}","method":"${method}","url":${JSON.stringify(url)},"remoteAddress":"${req.socket.remoteAddress}"},"traceId":"${traceId}","res":{"statusCode":${status}},"responseTime":${Math.round(elapsedMs)},"msg":"${method} ${status}"}\n`,
    );
  });
  bodyOf(req)
    .then(async (body) => {
      const signed = checkSignature(req, body, secret);
      if (typeof signed === 'number') return refuse(res, signed);
      if (!/^[\w.-]+$/.test(signed.keyId)) return refuse(res, 401);
      const claims = claimsOf(req.headers.authorization);
      if (claims === undefined) return refuse(res, 401);
      const quota = await admitted(signed.keyId, signed.nonce, String(req.headers['x-idempotency-key']), method, signed.created, claims);
      if (typeof quota === 'number') return refuse(res, quota);
      res
        .writeHead(200, [
          'X-Request-Id', id, ...SECURITY,
          'RateLimit-Policy', POLICY, 'RateLimit', `"default";r=${Math.max(0, quota.remaining)};t=${Math.max(0, Math.ceil(quota.waitMs / 1000))}`,
          'content-type', 'application/json; charset=utf-8', 'content-length', String(STATION_JSON.length), 'x-cache', 'HIT', 'age', '0',
        ])
        .end(STATION_JSON);
    })
    .catch(() => refuse(res, 500));
});
listen(server, options.port);
