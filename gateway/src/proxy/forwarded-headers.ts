import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { CLIENT_KEY_ID_HEADER, INTERNAL_ASSERTION_HEADER, assertForwarding } from '@platform/service-kit';

/**
 * Client headers an upstream may see. Everything else is dropped: hop-by-hop headers, cookies, the
 * signature headers (the gateway's business only) and any X-Request-Id, X-Forwarded-*, X-Client-Key-Id or
 * X-Internal-Assertion a client tries to set, which the gateway writes itself. The client's Host is not
 * passed on (as X-Forwarded-Host): it is not under the internal assertion, and no service has a use for it.
 */
export const FORWARDED_REQUEST_HEADERS = [
  'accept',
  'accept-encoding',
  'accept-language',
  'authorization',
  'content-type',
  // Conditional requests (CONTRACT.md part 17): risk answers them with 304 (or 412 on its POST lookup).
  'if-modified-since',
  'if-none-match',
  'user-agent',
  'x-idempotency-key',
] as const;

/** Upstream response headers a client may see; X-Request-Id and CORS headers are the gateway's own. */
export const RETURNED_RESPONSE_HEADERS = [
  'allow',
  'cache-control',
  'content-encoding',
  'content-language',
  'content-length',
  'content-type',
  'etag',
  'expires',
  'last-modified',
  'location',
  'retry-after',
  'www-authenticate',
] as const;

/** What the gateway knows about a request that it tells the upstream. */
export interface ForwardingFacts {
  /** The gateway's own id of the request (never the client's X-Request-Id), under the assertion. */
  requestId: string;
  /** The verified signing key id, so the upstream can throttle per client key (CONTRACT.md part 4). */
  keyId: string;
  clientAddress: string;
  proto: 'http' | 'https';
  method: string;
  /** The request target (path and query) as forwarded. */
  target: string;
  bodyLength: number;
  /** INTERNAL_ASSERTION_KEY: the services believe the address and key id only under its assertion. */
  assertionKey: string;
  /**
   * The W3C `traceparent` continuing the request's trace (CONTRACT.md part 12), when the gateway writes it
   * itself; undefined when OpenTelemetry's HTTP instrumentation puts its own on the upstream request.
   * Not under the assertion: a trace id vouches for nothing.
   */
  traceparent: string | undefined;
  /**
   * The gateway checked the request's bearer token against the revocations in its admission round trip:
   * the assertion then covers the `Authorization` header and says so (`v3`, CONTRACT.md part 10).
   */
  checkedBearer?: boolean;
  /**
   * When the upstream must have answered, or changed nothing, by (Unix ms; `serviceDeadline`), under the
   * assertion, so that the gateway's 504 means nothing was changed (CONTRACT.md part 3).
   */
  deadlineAtMs?: number;
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** The headers of the request to the upstream: the allow-listed client headers plus the gateway's own. */
export function upstreamRequestHeaders(incoming: IncomingHttpHeaders, facts: ForwardingFacts): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of FORWARDED_REQUEST_HEADERS) {
    // Node joins repeated lines of these headers into one string.
    const value = incoming[name];
    if (typeof value === 'string') out[name] = value;
  }
  out['x-request-id'] = facts.requestId;
  out[CLIENT_KEY_ID_HEADER] = facts.keyId;
  out['x-forwarded-for'] = facts.clientAddress;
  out['x-forwarded-proto'] = facts.proto;
  // CONTRACT.md part 10: without this a service takes neither the address, the key id nor the request id for true.
  out[INTERNAL_ASSERTION_HEADER] = assertForwarding(facts.assertionKey, {
    method: facts.method,
    target: facts.target,
    forwardedFor: facts.clientAddress,
    forwardedProto: facts.proto,
    clientKeyId: facts.keyId,
    requestId: facts.requestId,
    checkedAuthorization: facts.checkedBearer === true ? out.authorization : undefined,
    deadlineAtMs: facts.deadlineAtMs,
  });
  if (facts.traceparent !== undefined) out.traceparent = facts.traceparent;
  // The body is re-sent from the verified buffer, so its length is known: never chunked upstream.
  if (facts.bodyLength > 0 || BODY_METHODS.has(facts.method)) out['content-length'] = String(facts.bodyLength);
  return out;
}

/** The allow-listed headers of an upstream response. */
export function clientResponseHeaders(upstream: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const name of RETURNED_RESPONSE_HEADERS) {
    const value = upstream[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

function listOf(header: string | string[] | undefined): string[] {
  const text = Array.isArray(header) ? header.join(',') : (header ?? '');
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/**
 * The client's address and scheme. With no trusted proxy in front (the default) the socket peer is the
 * client and any X-Forwarded-* it sent is ignored, so nobody can pose as another address to dodge the
 * per-address login throttle. With `trustedHops` load balancers, the address is the one the outermost
 * of them saw, and the scheme is what the nearest one reports.
 */
export function clientOrigin(
  socket: { remoteAddress: string | undefined; encrypted: boolean },
  headers: IncomingHttpHeaders,
  trustedHops: number,
): { address: string; proto: 'http' | 'https' } {
  const direct = { address: socket.remoteAddress ?? 'unknown', proto: socket.encrypted ? ('https' as const) : ('http' as const) };
  if (trustedHops === 0) return direct;
  const chain = listOf(headers['x-forwarded-for']);
  const address = chain[chain.length - trustedHops] ?? chain[0] ?? direct.address;
  const proto = listOf(headers['x-forwarded-proto']).at(-1);
  return { address, proto: proto === 'https' || proto === 'http' ? proto : direct.proto };
}
