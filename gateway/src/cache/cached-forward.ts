// The last step of a station request when the gateway's cache is on (CONTRACT.md part 17): after every
// check (signature, nonce, idempotency key, rate limit, bearer token), a fresh entry answers at once
// (`X-Cache: HIT`, `Age`, a 304 when the client's If-None-Match names it); a miss makes one upstream
// request per key however many wait for it, stores a 200 or 404 of the current generation, and answers
// (`X-Cache: MISS`). Nothing else is stored: the gateway's own refusals never get here, and an upstream
// 5xx or 401 is answered, not kept.
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { isErrorBody } from '@platform/errors';
import { STATION_GENERATION_HEADER, keepHeader, noneMatchHits } from '@platform/service-kit';
import type { GatewayRequest } from '../pipeline/gateway-request.ts';
import { clientResponseHeaders } from '../proxy/forwarded-headers.ts';
import { pathOf } from '../proxy/operation-table.ts';
import type { UpstreamAnswer, UpstreamClient, UpstreamExchange, UpstreamOutcome } from '../proxy/upstream-client.ts';
import type { CachedAnswer, StationCache } from './station-cache.ts';

/** How long a stored answer is served at most: a 200's own max-age, else this (the station answers' max-age). */
const DEFAULT_FRESH_MS = 60_000;
const CONDITIONAL = new Set(['if-none-match', 'if-modified-since']);

/** Characters a percent-encoding may be decoded to without changing what the URI means (RFC 3986 section 2.3). */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/**
 * A path or query in RFC 3986 section 6.2.2's normal form: a percent-encoded unreserved character
 * decoded, every other percent-encoding in upper case, nothing else touched. Two targets alike in this
 * form mean the same to every server; `%26` (an `&` inside a value), `%2F` or a malformed `%ZY` stay what
 * they are, so no request is ever answered from another's entry.
 */
function normalised(text: string): string {
  if (!text.includes('%')) return text;
  return text.replace(/%[0-9A-Fa-f]{2}/g, (escape) => {
    const char = String.fromCharCode(Number.parseInt(escape.slice(1), 16));
    return UNRESERVED.test(char) ? char : escape.toUpperCase();
  });
}

/**
 * The cache key: the operation, the normalised path, the query's normalised pairs ordered by name (pairs of
 * one name keep their order, which a server may read), and the body's digest.
 */
export function cacheKey(request: GatewayRequest): string {
  const { req, operation, body } = request;
  const target = req.originalUrl;
  const path = normalised(pathOf(target));
  const q = target.indexOf('?');
  const query =
    q === -1
      ? ''
      : normalised(target.slice(q + 1))
          .split('&')
          .filter((pair) => pair !== '')
          .map((pair) => [pair.split('=', 1)[0] ?? '', pair] as const)
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([, pair]) => pair)
          .join('&');
  const digest = body.length === 0 ? '' : createHash('sha256').update(body).digest('base64url');
  return `${operation.method} ${operation.template}\n${path}\n${query}\n${digest}`;
}

/** A 404's error body (SPEC.md's shape, else undefined), parsed once when stored: each hit writes it with its own time and path. */
function errorFields(body: Buffer): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'));
    return isErrorBody(parsed) ? { ...parsed } : undefined;
  } catch {
    return undefined;
  }
}

/** A 200's max-age in ms, when its Cache-Control names one. */
function freshFor(answer: UpstreamAnswer): number {
  const maxAge = /(?:^|,)\s*max-age=(\d{1,9})\s*(?:,|$)/i.exec(String(answer.headers['cache-control'] ?? ''))?.[1];
  return answer.status === 200 && maxAge !== undefined ? Number(maxAge) * 1000 : DEFAULT_FRESH_MS;
}

/** The answer headers a 304 carries: the validators and Cache-Control of the answer it stands for. */
function notModifiedHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['etag', 'last-modified', 'cache-control']) if (headers[name] !== undefined) out[name] = headers[name] as string;
  return out;
}

/** Writes a stored answer (or its 304) with `X-Cache: HIT` and its `Age`; a stored 404 gets this request's time and path. */
function writeHit(request: GatewayRequest, entry: CachedAnswer, res: ServerResponse, now: number): number {
  const age = String(Math.max(0, Math.floor((now - entry.storedAt) / 1000)));
  const ifNoneMatch = request.req.headers['if-none-match'];
  if (entry.status === 200 && entry.etag !== undefined && noneMatchHits(ifNoneMatch, entry.etag)) {
    res.writeHead(304, { ...notModifiedHeaders(entry.headers), 'x-cache': 'HIT', age }).end();
    return 304;
  }
  let body = entry.body;
  if (entry.error !== undefined) body = Buffer.from(JSON.stringify({ ...entry.error, timestamp: new Date(now).toISOString(), path: pathOf(request.req.originalUrl) }));
  res.writeHead(entry.status, { ...entry.headers, 'content-length': String(body.length), 'x-cache': 'HIT', age }).end(body);
  return entry.status;
}

export interface CachedForwardOptions {
  cache: StationCache;
  upstream: UpstreamClient;
  /** Times one upstream exchange (the gateway's histogram); called with how it ended. */
  timer: () => (outcome: UpstreamOutcome) => void;
  now?: () => number;
}

/**
 * Answers `request` from the cache or through it; resolves with the status the client got. `exchangeOf`
 * builds the upstream request (its headers, the assertion's HMAC), called only when one is sent. Without
 * a generation confirmed in Redis, and for a POST that carries If-None-Match (its answer is risk's 412),
 * the request goes upstream as it is, conditional headers and all.
 */
export async function forwardThroughCache(options: CachedForwardOptions, request: GatewayRequest, exchangeOf: () => UpstreamExchange): Promise<number> {
  const { cache, upstream } = options;
  const now = options.now ?? Date.now;
  const { req, res } = request;
  if (!cache.usable() || (req.method === 'POST' && req.headers['if-none-match'] !== undefined)) {
    cache.miss();
    keepHeader(res, 'x-cache', 'MISS');
    const timer = options.timer();
    return await upstream.send(exchangeOf(), res, (outcome) => timer(outcome));
  }
  const key = cacheKey(request);
  const entry = cache.get(key);
  if (entry !== undefined) {
    cache.hit();
    return writeHit(request, entry, res, now());
  }
  cache.miss();
  const exchange = exchangeOf();
  // The whole answer is wanted, whatever the client holds: the conditional headers stay here.
  const headers = Object.fromEntries(Object.entries(exchange.headers).filter(([name]) => !CONDITIONAL.has(name)));
  const answer = await cache.once(key, async () => {
    const timer = options.timer();
    const read = await upstream.read({ ...exchange, headers }, (outcome) => timer(outcome));
    const generation = Number(read.headers[STATION_GENERATION_HEADER]);
    // A 404 is kept only as the error shape it must be, since every hit rewrites its time and path.
    const error = read.status === 404 ? errorFields(read.body) : undefined;
    if ((read.status === 200 || error !== undefined) && Number.isSafeInteger(generation)) {
      const etag = read.headers.etag;
      cache.put(key, {
        status: read.status === 200 ? 200 : 404,
        headers: clientResponseHeaders(read.headers) as Record<string, string>,
        body: read.body,
        error,
        etag: typeof etag === 'string' ? etag : undefined,
        generation,
        freshForMs: freshFor(read),
      });
    }
    return read;
  });
  // The request deadline answered first: the client has that.
  if (res.headersSent) return res.statusCode;
  keepHeader(res, 'x-cache', 'MISS');
  const etag = answer.headers.etag;
  if (answer.status === 200 && req.method !== 'POST' && typeof etag === 'string' && noneMatchHits(req.headers['if-none-match'], etag)) {
    res.writeHead(304, notModifiedHeaders(clientResponseHeaders(answer.headers) as Record<string, string>)).end();
    return 304;
  }
  upstream.answer(exchange, answer, res);
  return answer.status;
}
