import { nonceLifetimeS } from '../signing/signature-policy.ts';

/** The gateway settings the API document states, so it never disagrees with the running gateway. */
export interface SigningFacts {
  maxSkewS: number;
  safeTtlS: number;
  unsafeTtlS: number;
  bodyLimitBytes: number;
}

/** `86400` → `24 h`, `600` → `10 min`: durations as people read them. */
function duration(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/** How to sign a request (CONTRACT.md parts 2 and 3), in the words the API document shows. */
export function signingDescription(facts: SigningFacts): string {
  return `Every request to \`/v1/**\` is signed with RFC 9421 HTTP Message Signatures under the label \`sig1\`:

- \`Signature-Input: sig1=("@method" "@path" "@query" "x-idempotency-key" "content-digest" "authorization");created=1700000000;nonce="<nonce>";keyid="<key id>"\`
- \`Signature: sig1=:<base64 signature over the signature base>:\`

Covered components: \`"@method"\`, \`"@path"\`, \`"@query"\` (\`?\` when the URL has no query) and \`"x-idempotency-key"\` always; \`"content-digest"\` whenever the request has a body, with \`Content-Digest: sha-256=:<base64 of the SHA-256 of the body bytes>:\` (RFC 9530); \`"authorization"\` whenever that header is sent. More components may be covered; fewer are refused.

Parameters: \`created\` (Unix seconds, within ±${facts.maxSkewS} s of the gateway clock), \`nonce\` (16–128 characters of \`[A-Za-z0-9_-]\`, never reused by the same key), \`keyid\`; optional \`alg\` (it must equal the key's algorithm) and \`expires\` (not past).

Algorithms: \`hmac-sha256\` (a shared secret, its UTF-8 bytes as the HMAC key) and \`ed25519\` (the gateway holds only the client's public key).

Any signature fault answers 401 \`Invalid request signature\`; a nonce seen before from the same key (remembered ${duration(nonceLifetimeS(facts.maxSkewS))}, as long as a signature carrying it can be accepted) answers 409 \`Replay attack detected (nonce reused)\`.`;
}

/** The idempotency rules (CONTRACT.md part 3), in the words the API document shows. */
export function idempotencyDescription(facts: SigningFacts): string {
  return `1–255 visible ASCII characters, required on every request (else 400 \`Missing X-Idempotency-Key header\`). A key already used by the same client key answers 409 \`Duplicate request detected (X-Idempotency-Key)\`; keys are remembered ${duration(facts.unsafeTtlS)} for POST, PUT, PATCH and DELETE and ${duration(facts.safeTtlS)} for GET and HEAD. A request that fails with a 5xx (or an unreachable upstream) frees its key, so the client may retry with it.`;
}

/** The rate limits (CONTRACT.md part 12), in the words the API document shows. */
export const RATE_LIMIT_DESCRIPTION = `Every signed request counts against its client key's rate limit, shared by every gateway replica: at most \`q\` requests in any \`w\` seconds (a sliding window). Beyond it the answer is 429 \`Rate limit exceeded\` with \`Retry-After\`; the refused request spends neither its nonce nor its idempotency key. A replay (a nonce already used) is answered 409 and counts for nothing, so replaying a captured request cannot spend the key's quota. Every answer to a request whose signature verified carries the key's \`RateLimit-Policy\` and \`RateLimit\` fields (draft-ietf-httpapi-ratelimit-headers): \`RateLimit-Policy: "default";q=10000;w=1\`, \`RateLimit: "default";r=9998;t=1\` (\`r\` requests left, \`t\` seconds until the quota grows again). An unsigned request spends nobody's quota and carries neither.`;

/** The document's `info`: the gateway's rules first, then what each service says about itself. */
export function gatewayInfo(facts: SigningFacts, identity: Record<string, unknown>, risk: Record<string, unknown>): Record<string, unknown> {
  const part = (info: Record<string, unknown>) => `## ${String(info.title)}\n\n${String(info.description ?? info.summary ?? '')}`;
  return {
    title: 'Identity & risk platform API',
    version: String(identity.version ?? '1.0.0'),
    summary: 'Users, accounts, authentication and Turkish weather-station lookup, through the signing gateway.',
    description: `All operations are called through the gateway, which routes by path: \`/v1/auth\`, \`/v1/users\` and \`/v1/accounts\` to the identity service, \`/v1/weather-stations\` to the risk service.

## Request signatures

${signingDescription(facts)}

## Idempotency keys

${idempotencyDescription(facts)}

## Rate limits

${RATE_LIMIT_DESCRIPTION}

Bodies are limited to ${facts.bodyLimitBytes} bytes (413).

${part(identity)}

${part(risk)}`,
    license: identity.license,
  };
}

/** The key's quota fields (CONTRACT.md part 12), as the headers of an answer that carries them. */
export const QUOTA_HEADERS = {
  'RateLimit-Policy': { $ref: '#/components/headers/RateLimitPolicy' },
  RateLimit: { $ref: '#/components/headers/RateLimit' },
};

/** The station cache's fields (CONTRACT.md part 17), on the answers of the operations whose answers it keeps. */
export const CACHE_HEADERS = {
  'X-Cache': { $ref: '#/components/headers/XCache' },
  Age: { $ref: '#/components/headers/Age' },
};

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } },
});

/** The security schemes, header parameter and answers the gateway adds to every operation. */
export function gatewayComponents(facts: SigningFacts) {
  return {
    securitySchemes: {
      requestSignature: {
        type: 'apiKey',
        in: 'header',
        name: 'Signature',
        description: `${signingDescription(facts)}\n\n(OpenAPI has no scheme type for RFC 9421; \`apiKey\` names the header only.)`,
      },
      bearerAuth: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description:
          '`Authorization: Bearer <accessToken>`, the access token from login or refresh, checked by the gateway (signature, issuer, audience, expiry, logout blacklist) and again by the service, which also checks roles. Missing, invalid, expired or revoked → 401 `Bad Credentials`.',
      },
    },
    parameters: {
      IdempotencyKey: {
        name: 'X-Idempotency-Key',
        in: 'header',
        required: true,
        description: idempotencyDescription(facts),
        schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]+$' },
      },
    },
    headers: {
      XCache: {
        description: '`HIT`: answered from the gateway\'s station cache, after every check (CONTRACT.md part 17); `MISS`: risk answered it. Absent when the cache is off.',
        schema: { type: 'string', enum: ['HIT', 'MISS'] },
      },
      Age: {
        description: 'Seconds since a cached answer was stored (on a `HIT` only).',
        schema: { type: 'integer', minimum: 0 },
      },
      RateLimitPolicy: {
        description: 'The client key\'s quota policy (draft-ietf-httpapi-ratelimit-headers): `"<policy>";q=<requests>;w=<seconds>`.',
        schema: { type: 'string', pattern: '^"[!#-\\[\\]-~]+";q=\\d+;w=\\d+$' },
      },
      RateLimit: {
        description: 'What is left of the quota: `"<policy>";r=<requests left>;t=<seconds until it grows again>`.',
        schema: { type: 'string', pattern: '^"[!#-\\[\\]-~]+";r=\\d+;t=\\d+$' },
      },
      RateLimitRetryAfter: { description: 'Seconds until a request of this key fits in its window again.', required: true, schema: { type: 'integer', minimum: 1 } },
      ServiceRetryAfter: { description: 'Seconds to wait before trying again (CONTRACT.md part 13: every 503 a retry can cure says so).', required: true, schema: { type: 'integer', minimum: 1 } },
    },
    responses: {
      GatewayRateLimited: {
        ...errorResponse(`The client key's rate limit was exceeded (\`Rate limit exceeded\`); retry after \`Retry-After\` seconds. ${RATE_LIMIT_DESCRIPTION}`),
        headers: {
          'Retry-After': { $ref: '#/components/headers/RateLimitRetryAfter' },
          ...QUOTA_HEADERS,
        },
      },
      InvalidSignature: errorResponse('The request signature is missing or invalid (`Invalid request signature`), or the bearer token is (`Bad Credentials`).'),
      GatewayConflict: errorResponse('The nonce or the idempotency key was used before by this client key.'),
      BadGateway: errorResponse('The service behind the gateway could not be reached.'),
      GatewayUnavailable: {
        ...errorResponse(
          'The gateway cannot admit the request right now, and nothing was forwarded: its Redis is down; or Redis lost its data and the token revocations are being restored (a request with a bearer token); or the request was signed in the very second Redis lost its data, which cannot be told apart from before it (sign it again). Retry after the seconds in `Retry-After`, with a fresh signature; the idempotency key was not kept.',
        ),
        headers: { 'Retry-After': { $ref: '#/components/headers/ServiceRetryAfter' } },
      },
      GatewayTimeout: errorResponse(`The service behind the gateway did not answer in time.`),
    },
  };
}
