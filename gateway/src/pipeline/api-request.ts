import { randomUUID } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import type { Request, RequestHandler, Response } from 'express';
import { REVOCATIONS_RESTORING_MESSAGE, type TokenVerifier } from '@platform/auth';
import { ConflictError, ServiceUnavailableError, TooManyRequestsError, UnauthorizedError, toHttpError } from '@platform/errors';
import { type Logger, formatTraceparent, requestLog, requestTrace } from '@platform/service-kit';
import { type BearerVerdict, checkBearer } from '../bearer/bearer-check.ts';
import { idempotencyKeyOf } from '../idempotency/idempotency-key.ts';
import type { Claim, ReplayGuard } from '../idempotency/replay-guard.ts';
import { clientOrigin, upstreamRequestHeaders } from '../proxy/forwarded-headers.ts';
import type { GatewayOperation } from '../proxy/operation-table.ts';
import type { UpstreamOutcome, UpstreamProxy } from '../proxy/upstream-proxy.ts';
import { rateLimitHeaders } from '../rate-limit/rate-limit-headers.ts';
import type { RateLimitPolicy, RateLimits } from '../rate-limit/rate-limits.ts';
import { SignatureFault } from '../signing/signature-fault.ts';
import { type SignatureVerifierOptions, type VerifiedSignature, verifyRequestSignature } from '../signing/verify-request.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';

/** What the checks of an API request need. */
export interface ApiRequestDeps {
  signatures: SignatureVerifierOptions;
  /** GATEWAY_RATE_LIMITS (CONTRACT.md part 12). */
  rateLimits: RateLimits;
  tokens: TokenVerifier;
  guard: ReplayGuard;
  metrics: GatewayMetrics;
  logger: Logger;
  trustedProxyHops: number;
  /** INTERNAL_ASSERTION_KEY (CONTRACT.md part 10). */
  assertionKey: string;
}

const EMPTY = Buffer.alloc(0);

/** The 503 of a signature created in the second Redis lost its data: sign again after Retry-After. */
export const SIGNED_IN_LOSS_SECOND_MESSAGE = 'Replay protection was reset in the second this request was signed; sign it again and retry';

async function verifySignature(req: Request, body: Buffer, deps: ApiRequestDeps): Promise<VerifiedSignature> {
  try {
    return await verifyRequestSignature({ method: req.method, target: req.originalUrl, authority: req.headers.host, headers: req.headers }, body, deps.signatures);
  } catch (err) {
    if (!(err instanceof SignatureFault)) throw err;
    deps.metrics.rejected('signature');
    requestLog(req, deps.logger).warn({ reason: err.message }, 'request signature rejected');
    throw new UnauthorizedError('Invalid request signature', { cause: err });
  }
}

/**
 * The key's quota on the answer, whatever it is (CONTRACT.md part 12). While Redis cannot count, nothing
 * is admitted: no quota left, ask again in a second.
 */
function setQuotaHeaders(res: Response, policy: RateLimitPolicy, claim: Claim | undefined): void {
  const headers = rateLimitHeaders(policy, claim?.quota ?? { remaining: 0, resetMs: 1000 });
  res.setHeader('RateLimit-Policy', headers['RateLimit-Policy']);
  res.setHeader('RateLimit', headers.RateLimit);
}

/**
 * Turns the Redis verdict and the bearer verdict into the first failing answer, in CONTRACT.md part 3 and
 * 12 order (the script itself answers a replay as `nonce-reused` even over the limit).
 */
function assertAdmitted({ outcome, quota }: Claim, keyId: string, bearer: BearerVerdict, deps: ApiRequestDeps, req: Request): void {
  if (outcome === 'signed-before-loss') {
    deps.metrics.rejected('signature');
    requestLog(req, deps.logger).warn({ reason: 'created before the replay store lost its data' }, 'request signature rejected');
    throw new UnauthorizedError('Invalid request signature');
  }
  if (outcome === 'signed-in-loss-second') {
    // Maybe signed after the loss, maybe before (seconds against milliseconds): not accepted, but an honest
    // client that signs again a second later is (CONTRACT.md part 13), so no 401 for it to misread.
    deps.metrics.rejected('signed-in-loss-second');
    requestLog(req, deps.logger).info({ reason: 'created in the second the replay store lost its data' }, 'request asked to sign again');
    throw new ServiceUnavailableError(SIGNED_IN_LOSS_SECOND_MESSAGE, { retryAfterSeconds: 1 });
  }
  if (outcome === 'revocations-restoring') {
    deps.metrics.rejected('revocations-restoring');
    throw new ServiceUnavailableError(REVOCATIONS_RESTORING_MESSAGE);
  }
  if (outcome === 'rate-limited') {
    deps.metrics.rateLimited(keyId);
    throw new TooManyRequestsError('Rate limit exceeded', (quota?.resetMs ?? 1000) / 1000);
  }
  if (outcome === 'nonce-reused') {
    deps.metrics.rejected('nonce-reused');
    throw new ConflictError('Replay attack detected (nonce reused)');
  }
  if (outcome === 'key-reused') {
    deps.metrics.rejected('idempotency-key-reused');
    throw new ConflictError('Duplicate request detected (X-Idempotency-Key)');
  }
  if (bearer.fault !== undefined) {
    deps.metrics.rejected('bearer');
    throw bearer.fault;
  }
  if (outcome === 'token-revoked') {
    deps.metrics.rejected('bearer');
    throw new UnauthorizedError('Bad Credentials', { cause: new Error('token is revoked') });
  }
}

async function handle(req: Request, res: Response, deps: ApiRequestDeps, proxy: UpstreamProxy, operation: GatewayOperation, next: (err?: unknown) => void): Promise<void> {
  const idempotencyKey = idempotencyKeyOf(req.headers['x-idempotency-key']);
  const body = Buffer.isBuffer(req.body) ? req.body : EMPTY;
  const { keyId, nonce, created } = await verifySignature(req, body, deps);
  // The token is checked on the CPU now so its revocation keys can join the one Redis round trip below.
  const bearer: BearerVerdict = operation.needsBearer ? await checkBearer(deps.tokens, req.headers.authorization) : { principal: undefined };
  const owner = randomUUID();
  // Whether this request may hold its idempotency key: from the moment the claim is sent (a claim whose
  // answer was lost may have run) until the answer says it claimed nothing.
  let mayHoldKey = false;
  let releasing: Promise<void> | undefined;
  // The one place the idempotency key is freed (CONTRACT.md part 3): the request ended in a 5xx. Told by
  // the answer once it is over (the upstream's, the proxy's 502/504, the deadline's 503), by the upstream
  // as soon as it answered (so the release leaves before the relayed 5xx, and a client that hung up
  // still gets its retry), and by a failure here (Redis down, a fault of the gateway).
  const settle = (status: number) => {
    if (status < 500 || !mayHoldKey) return;
    releasing ??= deps.guard.release({ keyId, idempotencyKey, owner }).catch((err: unknown) => {
      requestLog(req, deps.logger).warn({ err, keyId }, 'could not release the idempotency key after a 5xx');
    });
  };
  res.once('close', () => settle(res.statusCode));
  const policy = deps.rateLimits.policyFor(keyId);
  try {
    let claim: Claim;
    try {
      const bearing = operation.needsBearer || req.headers.authorization !== undefined;
      mayHoldKey = true;
      claim = await deps.guard.claim({ keyId, nonce, idempotencyKey, method: req.method, token: bearer.principal, bearing, created, owner, rate: policy });
      // Refused before the key was claimed (a 503 while the revocations are restored among them): nothing to free.
      mayHoldKey = claim.outcome === 'claimed' || claim.outcome === 'token-revoked';
    } catch (err) {
      // Fail closed: without Redis no replay can be ruled out, so nothing is proxied. A frozen Redis
      // still runs the claim once it resumes; the release, on the same connection, comes after it.
      deps.metrics.rejected('redis-unavailable');
      setQuotaHeaders(res, policy, undefined);
      throw new ServiceUnavailableError(undefined, { cause: err });
    }
    setQuotaHeaders(res, policy, claim);
    assertAdmitted(claim, keyId, bearer, deps, req);
    // Without the SDK the gateway continues the trace itself; with it, the HTTP instrumentation does.
    const trace = requestTrace(req);
    const origin = clientOrigin({ remoteAddress: req.socket.remoteAddress, encrypted: (req.socket as TLSSocket).encrypted === true }, req.headers, deps.trustedProxyHops);
    const headers = upstreamRequestHeaders(req.headers, {
      // The gateway's own (it never takes a client's), as its answer and its log line carry it.
      requestId: String(res.getHeader('x-request-id') ?? ''),
      keyId,
      clientAddress: origin.address,
      proto: origin.proto,
      host: req.headers.host,
      method: req.method,
      target: req.originalUrl,
      bodyLength: body.length,
      assertionKey: deps.assertionKey,
      traceparent: trace.fromSdk ? undefined : formatTraceparent(trace),
    });
    const timer = deps.metrics.upstreamTimer(proxy.name);
    const ended = (outcome: UpstreamOutcome) => {
      timer(String(outcome));
      settle(typeof outcome === 'number' ? outcome : 502);
    };
    proxy.forward(req, res, next, { headers, ended });
  } catch (err) {
    settle(toHttpError(err).status);
    throw err;
  }
}

/**
 * The checks of a request for `operation` after its idempotency header and body were read, in CONTRACT.md
 * part 3 and 12 order: signature → rate limit → nonce → idempotency key → bearer token (when the
 * operation needs one) → proxy to `proxy`'s upstream; but a reused nonce is told apart before the rate
 * limit counts it, so a replay spends no quota (README, Rate limits).
 */
export function apiRequest(deps: ApiRequestDeps, proxy: UpstreamProxy, operation: GatewayOperation): RequestHandler {
  return (req, res, next) => {
    handle(req, res, deps, proxy, operation, next).catch(next);
  };
}
