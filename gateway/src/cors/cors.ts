import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { keepHeader, peekHeader } from '@platform/service-kit';

const ALLOWED_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE';
/**
 * What a browser client must be allowed to send: the signing headers, the bearer token, its trace context,
 * and the conditional headers of a revalidation (CONTRACT.md part 17).
 */
const ALLOWED_HEADERS = 'Authorization, Content-Type, Content-Digest, Signature, Signature-Input, X-Idempotency-Key, X-Request-Id, traceparent, If-None-Match, If-Modified-Since';
/**
 * Response headers a browser script may read besides the CORS-safelisted ones: the quota fields of CONTRACT.md
 * part 12, and a station answer's validator and cache fields (part 17), which the SDK keeps to revalidate.
 */
const EXPOSED_HEADERS = 'X-Request-Id, Retry-After, Allow, Location, WWW-Authenticate, RateLimit-Policy, RateLimit, ETag, Age, X-Cache';
const PREFLIGHT_MAX_AGE_S = '600';

/** A CORS preflight: an OPTIONS request that names the method it asks about. */
export function isPreflight(req: IncomingMessage): boolean {
  return req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined;
}

/**
 * The CORS headers of an answer to `req` (CORS_ORIGINS: exact match; no wildcard, no cookies); true when
 * `req` is a preflight, which the caller answers 204 (a browser cannot sign it). An origin not on the list
 * gets no CORS headers, so its browser refuses the answer. Plain `node:http`: the API front runs it too.
 */
export function corsHeaders(allowed: ReadonlySet<string>, req: IncomingMessage, res: ServerResponse): boolean {
  const origin = req.headers.origin;
  if (allowed.size > 0) {
    // As Express's res.vary: added to a Vary already there (once), not written over it.
    // Kept for the answer's head, as the envelope's are (service-kit's answer-head.ts).
    const vary = peekHeader(res, 'Vary');
    if (vary === undefined || vary === '') keepHeader(res, 'Vary', 'Origin');
    else if (!/(^|,)\s*(origin|\*)\s*(,|$)/i.test(String(vary))) keepHeader(res, 'Vary', `${String(vary)}, Origin`);
  }
  const permitted = origin !== undefined && allowed.has(origin);
  if (permitted) {
    keepHeader(res, 'Access-Control-Allow-Origin', origin);
    keepHeader(res, 'Access-Control-Expose-Headers', EXPOSED_HEADERS);
  }
  if (!isPreflight(req)) return false;
  if (permitted) {
    keepHeader(res, 'Access-Control-Allow-Methods', ALLOWED_METHODS);
    keepHeader(res, 'Access-Control-Allow-Headers', ALLOWED_HEADERS);
    keepHeader(res, 'Access-Control-Max-Age', PREFLIGHT_MAX_AGE_S);
  }
  return true;
}

/** `corsHeaders` as the app's middleware: preflights answered 204 here. */
export function cors(origins: readonly string[]): RequestHandler {
  const allowed = new Set(origins);
  return (req, res, next) => {
    if (corsHeaders(allowed, req, res)) {
      res.status(204).end();
      return;
    }
    next();
  };
}
