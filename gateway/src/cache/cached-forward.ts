// The last step of a station request when the gateway's cache is on (CONTRACT.md part 17): after every
// check (signature, nonce, idempotency key, rate limit, bearer token), a fresh entry answers at once
// (`X-Cache: HIT`, `Age`, a 304 when the client's copy is current); a miss makes one upstream request per
// key however many wait for it, stores a 200 or 404 of the current generation, and answers (`X-Cache:
// MISS`). Nothing else is stored: the gateway's own refusals never get here, and an upstream 5xx or 401 is
// answered, not kept, and not handed to the requests that waited for it (each asks upstream itself); when it
// never came (a timeout), they wait for the key's next upstream request, each no longer than its own wait.
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { GatewayTimeoutError, isErrorBody } from '@platform/errors';
import { type ConditionalRequest, STATION_GENERATION_HEADER, clientCopyCurrent, keepHeader, withTimeout } from '@platform/service-kit';
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
 * More query pairs than this (empty ones included) and the request is not cacheable: a parser that reads only
 * the first so many (Node's querystring, risk's: 1000) would see another request than the one the key names
 * once the pairs are sorted or the empty ones dropped.
 */
const MAX_QUERY_PAIRS = 64;

/**
 * The cache key: the operation, the normalised path, the query's normalised pairs ordered by name (pairs of
 * one name keep their order, which a server may read), and for a body its digest and its media type (case
 * and spaces aside: the charset changes what the same bytes say). Undefined when the request is not
 * cacheable (more than MAX_QUERY_PAIRS query pairs): it goes upstream as it is.
 */
export function cacheKey(request: GatewayRequest): string | undefined {
  const { req, operation, body } = request;
  const target = req.originalUrl;
  const path = normalised(pathOf(target));
  const q = target.indexOf('?');
  let query = '';
  if (q !== -1) {
    const pairs = normalised(target.slice(q + 1)).split('&');
    if (pairs.length > MAX_QUERY_PAIRS) return undefined;
    query = pairs
      .filter((pair) => pair !== '')
      .map((pair) => [pair.split('=', 1)[0] ?? '', pair] as const)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, pair]) => pair)
      .join('&');
  }
  if (body.length === 0) return `${operation.method} ${operation.template}\n${path}\n${query}\n`;
  const digest = createHash('sha256').update(body).digest('base64url');
  const type = String(req.headers['content-type'] ?? '').toLowerCase().replaceAll(/[ \t]/g, '');
  return `${operation.method} ${operation.template}\n${path}\n${query}\n${digest}\n${type}`;
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

/** Whether the client already holds `entry` (a 200; RFC 9110 section 13.2.2, as risk judges it): a 304 then. */
function clientHolds(req: ConditionalRequest, entry: CachedAnswer): boolean {
  return entry.status === 200 && clientCopyCurrent(req, { etag: entry.etag, lastModified: entry.headers['last-modified'] });
}

/**
 * Writes a stored answer (or its 304) with `xCache` (HIT, or MISS for a request that waited for another's
 * upstream request) and its `Age`; a stored 404 gets this request's time and target (query and all), as risk would give it.
 */
function writeEntry(request: GatewayRequest, entry: CachedAnswer, res: ServerResponse, now: number, xCache: 'HIT' | 'MISS'): number {
  const age = String(Math.max(0, Math.floor((now - entry.storedAt) / 1000)));
  if (clientHolds(request.req, entry)) {
    res.writeHead(304, { ...notModifiedHeaders(entry.headers), 'x-cache': xCache, age }).end();
    return 304;
  }
  let body = entry.body;
  // The path as received, query and all, as every error body gives it (SPEC.md's shape).
  if (entry.error !== undefined) body = Buffer.from(JSON.stringify({ ...entry.error, timestamp: new Date(now).toISOString(), path: request.req.originalUrl }));
  res.writeHead(entry.status, { ...entry.headers, 'content-length': String(body.length), 'x-cache': xCache, age }).end(body);
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
 * Answers `request` from the cache or through it, with the status the client got: a hit at once (no
 * promise: it waits for nothing), anything else when its answer came. `exchangeOf`
 * builds the upstream request (its headers, the assertion's HMAC), called only when one is sent. Without
 * a generation confirmed in Redis, for a request that is not cacheable (`cacheKey`), and for a POST that
 * carries If-None-Match (its answer is risk's 412), the request goes upstream as it is, conditional headers
 * and all. A request that waited for another's upstream request of the same key gets its answer in the form
 * a hit would (a 200, or a 404 with its own time and path), stored or not; when that answer is of no kind the
 * cache keeps (an error, an answer of no generation), it asks upstream itself: an answer is handed on only
 * in the form any request of the key may be given.
 */
export function forwardThroughCache(options: CachedForwardOptions, request: GatewayRequest, exchangeOf: () => UpstreamExchange): number | Promise<number> {
  const { cache } = options;
  const { req, res } = request;
  const key = !cache.usable() || (req.method === 'POST' && req.headers['if-none-match'] !== undefined) ? undefined : cacheKey(request);
  if (key === undefined) {
    cache.miss();
    keepHeader(res, 'x-cache', 'MISS');
    return sendAsItIs(options, res, exchangeOf);
  }
  const entry = cache.get(key);
  if (entry !== undefined) {
    cache.hit();
    return writeEntry(request, entry, res, (options.now ?? Date.now)(), 'HIT');
  }
  cache.miss();
  // Kept before the wait: a miss says so on whatever answers it, the gateway's 502 or 504 included.
  keepHeader(res, 'x-cache', 'MISS');
  return missed(options, request, key, exchangeOf);
}

/**
 * A miss of `key`: one upstream request for it however many wait (`StationCache.once`), its answer stored and
 * given. A request waits for an upstream answer no longer than UPSTREAM_TIMEOUT_MS from when it first waited
 * (`waitUntil`), whichever request's upstream request it waits for: one that joins another's late gets its 504
 * at the end of its own wait, not of the other's; and when the request it waited for got no answer at all (a
 * timeout, an upstream unreachable), it waits for the key's next one, which the first of them to ask leads.
 */
async function missed(options: CachedForwardOptions, request: GatewayRequest, key: string, exchangeOf: () => UpstreamExchange, waitUntil?: number): Promise<number> {
  const { cache, upstream } = options;
  const now = options.now ?? Date.now;
  const { req, res } = request;
  let led = false;
  let exchange: UpstreamExchange | undefined;
  const flying = cache.once(key, async () => {
    led = true;
    exchange = exchangeOf();
    // The whole answer is wanted, whatever the client holds: the conditional headers stay here.
    const headers = Object.fromEntries(Object.entries(exchange.headers).filter(([name]) => !CONDITIONAL.has(name)));
    const timer = options.timer();
    const read = await upstream.read({ ...exchange, headers }, (outcome) => timer(outcome));
    const generation = Number(read.headers[STATION_GENERATION_HEADER]);
    // A 404 is kept only as the error shape it must be, since every hit rewrites its time and path.
    const error = read.status === 404 ? errorFields(read.body) : undefined;
    // The answer as an entry, whether or not the cache keeps it (too big, or of another generation than the
    // current one): the form any request of the key may be given.
    let shared: CachedAnswer | undefined;
    if ((read.status === 200 || error !== undefined) && Number.isSafeInteger(generation)) {
      const etag = read.headers.etag;
      const answer = {
        status: read.status === 200 ? (200 as const) : (404 as const),
        headers: clientResponseHeaders(read.headers) as Record<string, string>,
        body: read.body,
        error,
        etag: typeof etag === 'string' ? etag : undefined,
        generation,
        freshForMs: freshFor(read),
      };
      shared = cache.put(key, answer) ?? { ...answer, storedAt: now(), bytes: 0 };
    }
    return { read, shared };
  });
  // The first leader's wait is its upstream request's own (UPSTREAM_TIMEOUT_MS of silence); every other's ends at `until`.
  const until = waitUntil ?? now() + upstream.timeoutMs;
  let waitOver: Error | undefined;
  let flight: Awaited<typeof flying>;
  try {
    flight = led && waitUntil === undefined ? await flying : await withTimeout(flying, Math.max(0, until - now()), () => (waitOver = new GatewayTimeoutError()));
  } catch (err) {
    // A request that joined got no answer of the key (the one it waited for timed out or could not reach the
    // upstream: its 504 or 502 is of its own wait): it waits on, for the key's next upstream request. The outside
    // attack: one joining 76 ms before the leader's timeout got its 504, though risk answered a retry at once.
    if (led || err === waitOver || res.headersSent) throw err;
    return await missed(options, request, key, exchangeOf, until);
  }
  // The request deadline answered first: the client has that.
  if (res.headersSent) return res.statusCode;
  if (!led) return flight.shared === undefined ? await sendAsItIs(options, res, exchangeOf) : writeEntry(request, flight.shared, res, now(), 'MISS');
  const { read } = flight;
  if (read.status === 200 && clientCopyCurrent(req, { etag: stringOf(read.headers.etag), lastModified: stringOf(read.headers['last-modified']) })) {
    res.writeHead(304, notModifiedHeaders(clientResponseHeaders(read.headers) as Record<string, string>)).end();
    return 304;
  }
  upstream.answer(exchange as UpstreamExchange, read, res);
  return read.status;
}

/** The request upstream as it is, conditional headers and all, its answer relayed to the client. */
async function sendAsItIs(options: CachedForwardOptions, res: ServerResponse, exchangeOf: () => UpstreamExchange): Promise<number> {
  const timer = options.timer();
  return await options.upstream.send(exchangeOf(), res, (outcome) => timer(outcome));
}

/** A header's value when it is one string. */
function stringOf(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
