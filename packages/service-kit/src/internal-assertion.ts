import { type Hmac, type KeyObject, createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { env } from './config.ts';
import { type RequestIdSource, requestLog } from './http-logger.ts';
import type { Logger } from './logger.ts';

/** The header in which the gateway vouches for what it tells a service (CONTRACT.md part 10). */
export const INTERNAL_ASSERTION_HEADER = 'x-internal-assertion';
/** The header naming the client key the gateway verified; believed only under a valid assertion. */
export const CLIENT_KEY_ID_HEADER = 'x-client-key-id';
/** How long an assertion is valid after it was made, either way of the clocks, seconds. */
export const ASSERTION_VALIDITY_S = 30;

/**
 * `v2` covers the request id as well; `v1` (gateways before it) does not, so under a `v1` assertion the
 * forwarded address and client key are believed but the request id is not. Services accept both so that
 * they can be deployed before the gateway; `v1` can go once no gateway sends it. `v3` is `v2` that also
 * covers the `Authorization` header and says the gateway checked that bearer token against the
 * revocations (CONTRACT.md part 10): a service may then skip its own revocation read.
 */
type Version = 'v1' | 'v2' | 'v3';

/** What the gateway vouches for: the request it forwards and who sent it. */
export interface ForwardedFacts {
  method: string;
  /** The request target as forwarded: path and query, exactly as sent upstream. */
  target: string;
  /** X-Forwarded-For: the client's address as the gateway saw it. */
  forwardedFor: string;
  /** X-Forwarded-Proto. */
  forwardedProto: string;
  /** X-Client-Key-Id: the signing key the gateway verified. */
  clientKeyId: string;
  /** X-Request-Id: the id the gateway gave the request (never the client's); absent when none is sent. */
  requestId?: string;
  /**
   * The `Authorization` header whose bearer token the gateway checked against the revocations for this
   * request (and found neither it nor its session revoked); undefined when it checked none.
   */
  checkedAuthorization?: string;
  /**
   * When the service must have answered, or changed nothing, by (Unix ms): a margin before the gateway's 504,
   * which frees the idempotency key for a retry (CONTRACT.md part 3), so that a 504 means nothing was changed
   * (`gatewayDeadline`). Sent as the assertion's `d`; undefined when none is sent.
   */
  deadlineAtMs?: number;
}

/** The configuration key shared by the three processes. */
export const internalAssertionSpec = {
  INTERNAL_ASSERTION_KEY: env.custom(
    'Secret shared by the gateway and the services: HMAC key of the assertion over forwarded addresses and client key ids (32+ characters)',
    (raw) => {
      if (raw.length < 32) throw new Error('must be at least 32 characters');
      return raw;
    },
    { localDefault: 'local-internal-assertion-key-0123456789abcdef', secret: true },
  ),
};

let lastKey: { raw: string; key: KeyObject } | undefined;

/** INTERNAL_ASSERTION_KEY as a key object, made once: a string key is imported again by every HMAC (~1 µs of each, per request). */
function hmacKey(raw: string): KeyObject {
  if (lastKey?.raw !== raw) lastKey = { raw, key: createSecretKey(Buffer.from(raw, 'utf8')) };
  return lastKey.key;
}

function mac(key: string, version: Version, issuedAtS: number, facts: ForwardedFacts): Hmac {
  const fields = [version, String(issuedAtS), facts.method, facts.target, facts.forwardedFor, facts.forwardedProto, facts.clientKeyId];
  if (version !== 'v1') fields.push(facts.requestId ?? '');
  if (version === 'v3') fields.push(facts.checkedAuthorization ?? '');
  // Under the MAC when sent, so that no one on the way can move it or take it off.
  if (facts.deadlineAtMs !== undefined) fields.push(`d=${Math.floor(facts.deadlineAtMs)}`);
  return createHmac('sha256', hmacKey(key)).update(fields.join('\n'), 'utf8');
}

/**
 * The assertion header's value: `v2;t=<unix seconds>;mac=<base64url HMAC-SHA256>` over the facts and the
 * time; `v3` when it also vouches for the bearer token in `checkedAuthorization`; `;d=<unix ms>` before the
 * MAC (and under it) when the facts name the gateway's deadline.
 */
export function assertForwarding(key: string, facts: ForwardedFacts, nowS = Math.floor(Date.now() / 1000)): string {
  const version: Version = facts.checkedAuthorization === undefined ? 'v2' : 'v3';
  // Whole milliseconds, as a service reads them.
  const deadline = facts.deadlineAtMs === undefined ? '' : `;d=${Math.floor(facts.deadlineAtMs)}`;
  return `${version};t=${nowS}${deadline};mac=${mac(key, version, nowS, facts).digest('base64url')}`;
}

const ASSERTION = /^(v1|v2|v3);t=(\d{1,12})(?:;d=(\d{1,15}))?;mac=([A-Za-z0-9_-]{43})$/;

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * What a service makes of a request's assertion: believed (and whether it covers the request id), or not
 * believed, with why (`fault` undefined: there was none, the normal case of a direct call).
 */
type Verdict = { believed: true; coversRequestId: boolean; checkedBearer: boolean; deadlineAtMs: number | undefined } | { believed: false; fault: string | undefined };

function judge(req: IncomingMessage, key: string, nowS: number): Verdict {
  const value = req.headers[INTERNAL_ASSERTION_HEADER];
  if (value === undefined) return { believed: false, fault: undefined };
  const match = ASSERTION.exec(typeof value === 'string' ? value : '');
  if (match === null) return { believed: false, fault: 'malformed' };
  const version = match[1] as Version;
  const issuedAtS = Number(match[2]);
  if (Math.abs(nowS - issuedAtS) > ASSERTION_VALIDITY_S) return { believed: false, fault: 'expired' };
  const facts: ForwardedFacts = {
    method: req.method ?? '',
    // Express's originalUrl where there is one: a mounted router rewrites req.url.
    target: (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '',
    forwardedFor: header(req, 'x-forwarded-for') ?? '',
    forwardedProto: header(req, 'x-forwarded-proto') ?? '',
    clientKeyId: header(req, CLIENT_KEY_ID_HEADER) ?? '',
    requestId: header(req, 'x-request-id') ?? '',
    checkedAuthorization: header(req, 'authorization') ?? '',
    deadlineAtMs: match[3] === undefined ? undefined : Number(match[3]),
  };
  const expected = mac(key, version, issuedAtS, facts).digest();
  const given = Buffer.from(match[4] ?? '', 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { believed: false, fault: 'wrong mac' };
  return { believed: true, coversRequestId: version !== 'v1', checkedBearer: version === 'v3', deadlineAtMs: facts.deadlineAtMs };
}

const VERDICT = Symbol('internal assertion verdict');
type WithVerdict = IncomingMessage & { [VERDICT]?: Verdict };

/** The verdict on `req`'s assertion, worked out once: the request id is decided first, the origin later. */
function verdictOf(req: IncomingMessage, key: string): Verdict {
  return ((req as WithVerdict)[VERDICT] ??= judge(req, key, Math.floor(Date.now() / 1000)));
}

/**
 * For `createBaseApp`'s `requestIdFrom` in a service: the incoming X-Request-Id only when a valid gateway
 * assertion covers it (CONTRACT.md part 10), so no caller, direct or through the gateway, picks the id
 * its request is logged and audited under.
 */
export function gatewayRequestId(key: string): RequestIdSource {
  return (req) => {
    const verdict = verdictOf(req, key);
    return verdict.believed && verdict.coversRequestId ? header(req, 'x-request-id') : undefined;
  };
}

/**
 * For a service's bearer check: true when a valid `v3` gateway assertion says the gateway checked this
 * request's `Authorization` (covered by the assertion) against the revocations a moment ago, so the
 * service need not read them again (CONTRACT.md part 10; @platform/auth's `bearerAuth`,
 * `checkedByGateway`: it still verifies the token itself). A direct call, or any other assertion: false.
 */
export function gatewayCheckedBearer(key: string): (req: IncomingMessage) => boolean {
  return (req) => {
    const verdict = verdictOf(req, key);
    return verdict.believed && verdict.checkedBearer;
  };
}

/**
 * For `createBaseApp`'s `deadlineFrom` in a service: when the request must have been answered, or have changed
 * nothing, by (Unix ms), as the gateway's valid assertion says (`d`); undefined for a direct call, any other
 * assertion, or one without `d`. The request envelope ends the request's deadline, and so its changes, there.
 */
export function gatewayDeadline(key: string): (req: IncomingMessage) => number | undefined {
  return (req) => {
    const verdict = verdictOf(req, key);
    return verdict.believed ? verdict.deadlineAtMs : undefined;
  };
}

/** Who sent a request, as far as a service may believe it. */
export interface RequestOrigin {
  /** The client's address: the gateway's X-Forwarded-For under a valid assertion, else the socket peer. */
  address: string;
  /** The client key the gateway verified; undefined without a valid assertion. */
  clientKeyId: string | undefined;
}

const ORIGIN = Symbol('request origin');
type WithOrigin = IncomingMessage & { [ORIGIN]?: RequestOrigin };

/**
 * Decides once per request whose address and client key a service believes (CONTRACT.md part 10): the
 * forwarded ones only under a valid gateway assertion, else the socket peer and no client key, so a
 * direct caller cannot choose whose throttles it spends. A present but invalid assertion is logged (a
 * forgery, or a gateway with another key), under the service's own request id; an absent one is the
 * normal case of a direct call.
 */
export function trustForwardingOnlyFromGateway(key: string, logger: Logger): RequestHandler {
  return (req, _res, next) => {
    const socketAddress = req.socket.remoteAddress ?? 'unknown';
    let origin: RequestOrigin = { address: socketAddress, clientKeyId: undefined };
    const verdict = verdictOf(req, key);
    if (verdict.believed) {
      const keyId = header(req, CLIENT_KEY_ID_HEADER);
      origin = { address: header(req, 'x-forwarded-for') || socketAddress, clientKeyId: keyId === '' ? undefined : keyId };
    } else if (verdict.fault !== undefined) {
      requestLog(req, logger).warn({ reason: verdict.fault, socketAddress }, 'internal assertion refused: forwarded address and client key ignored');
    }
    (req as WithOrigin)[ORIGIN] = origin;
    next();
  };
}

/** The origin `trustForwardingOnlyFromGateway` decided for `req`; the socket peer when it did not run. */
export function requestOrigin(req: IncomingMessage): RequestOrigin {
  return (req as WithOrigin)[ORIGIN] ?? { address: req.socket.remoteAddress ?? 'unknown', clientKeyId: undefined };
}
