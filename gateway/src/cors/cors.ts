import type { RequestHandler } from 'express';

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

/**
 * CORS for the origins of CORS_ORIGINS (exact match; no wildcard, no cookies). Preflights are answered
 * here, 204 without a signature (a browser cannot sign them); an origin not on the list gets no CORS
 * headers, so its browser refuses the answer.
 */
export function cors(origins: readonly string[]): RequestHandler {
  const allowed = new Set(origins);
  return (req, res, next) => {
    const origin = req.headers.origin;
    if (allowed.size > 0) res.vary('Origin');
    const permitted = origin !== undefined && allowed.has(origin);
    if (permitted) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
    }
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) {
      if (permitted) {
        res.setHeader('Access-Control-Allow-Methods', ALLOWED_METHODS);
        res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS);
        res.setHeader('Access-Control-Max-Age', PREFLIGHT_MAX_AGE_S);
      }
      res.status(204).end();
      return;
    }
    next();
  };
}
