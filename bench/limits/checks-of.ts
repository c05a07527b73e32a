// The checks of limits E and E′ (E′ traced, E′ enveloped and G too): the SDK's signature, the bearer token as the gateway
// verifies it, and the gateway's own admission in one Redis round trip (@platform/gateway/engine), in the
// stack's prefix.
import { createSecretKey, randomUUID } from 'node:crypto';
import { type IncomingMessage, type RequestListener, type Server, type ServerResponse, createServer } from 'node:http';
import { bearerTokenOf, createRevocationReader, createTokenVerifier, jwksKeySource } from '@platform/auth';
import { createAdmissionStore } from '@platform/gateway/engine';
import { createLogger, createRedis } from '@platform/service-kit';
import { AUDIENCE, type LimitOptions, RATE, type Vouch, answeredHealth, bodyOf, checkSignature, refuse } from './common.ts';

/** Checks a request: the vouch to forward it with, or the status of its refusal. */
export function checksOf(options: LimitOptions): (req: IncomingMessage, body: Buffer) => Promise<Vouch | undefined | number> {
  const key = createSecretKey(Buffer.from(options.keySecret, 'utf8'));
  const logger = createLogger({ service: 'limit-e', level: 'silent' });
  const redis = createRedis({ url: options.redisUrl, keyPrefix: options.redisPrefix, logger, autoPipelining: false });
  const store = createAdmissionStore(redis, { nonceTtlS: 600, safeTtlS: 86_400, unsafeTtlS: 86_400, revocations: createRevocationReader(redis, { logger }) });
  const tokens = createTokenVerifier({ keys: jwksKeySource({ url: options.jwksUrl, refreshIntervalMs: 5000 }), issuer: options.issuer, audience: AUDIENCE });
  const { assertionKey } = options;
  return async (req, body) => {
    const signed = checkSignature(req, body, key);
    if (typeof signed === 'number') return signed;
    const principal = await tokens.verify(bearerTokenOf(req.headers.authorization) ?? '').catch(() => undefined);
    if (principal === undefined) return 401;
    const owner = randomUUID();
    const admission = await store.admit({
      keyId: signed.keyId,
      nonce: signed.nonce,
      idempotencyKey: String(req.headers['x-idempotency-key']),
      method: req.method ?? 'GET',
      token: principal,
      bearing: true,
      created: signed.created,
      owner,
      rate: RATE,
    });
    if (admission.outcome !== 'claimed') return admission.outcome === 'rate-limited' ? 429 : admission.outcome === 'token-revoked' ? 401 : 409;
    return assertionKey === undefined ? undefined : { assertionKey, keyId: signed.keyId, requestId: owner, quota: admission.quota };
  };
}

/** What a checking limit does with a request that passed the checks. */
export type Pass = (req: IncomingMessage, res: ServerResponse, body: Buffer, vouch: Vouch | undefined) => void;

/**
 * The request handler of limits E′, E′ traced, E′ enveloped and G: health, the body read, the checks, then `pass` with
 * the checked request (E′ forwards it, G answers from memory); a refusal's status, or 500 when something threw.
 */
export function checkedHandler(check: ReturnType<typeof checksOf>, pass: Pass): RequestListener {
  return (req, res) => {
    if (answeredHealth(req, res)) return;
    bodyOf(req)
      .then(async (body) => {
        const passed = await check(req, body);
        if (typeof passed === 'number') return refuse(res, passed);
        pass(req, res, body, passed);
      })
      .catch(() => refuse(res, 500));
  };
}

/** The server of limit E′: `checkedHandler` on a plain node:http server. */
export function checkedServer(check: ReturnType<typeof checksOf>, pass: Pass): Server {
  return createServer(checkedHandler(check, pass));
}
