import { type Environment, resolveBaseUrls } from './environments.ts';
import { accountOperations, auditOperations, authOperations, factorOperations, sessionOperations, stationOperations, userOperations } from './operations.ts';
import { type SigningKey, createSigner } from './signing/signer.ts';
import { type ApiRequest, type ApiResponse, createTransport } from './transport.ts';
import type { AuthenticationResult } from './types.ts';

/** How to reach and sign for the platform. */
export interface ClientOptions {
  /** Picks the preset base URLs (`test` and `prod` are placeholders: pass the real URLs). */
  env: Environment;
  /** `{base_url}`: auth, users, accounts. Overrides the preset. */
  baseUrl?: string;
  /** `{risk_base_url}`: weather stations. Defaults to `baseUrl` when only that is given. */
  riskBaseUrl?: string;
  /** The client key id the gateway knows (`keyid` of the signature). */
  keyId: string;
  key: SigningKey;
  /** Defaults to the global `fetch`. */
  fetch?: typeof fetch;
  /** Milliseconds since the epoch, for the signature's `created`; defaults to `Date.now`. */
  clock?: () => number;
  /** Tokens from an earlier session (e.g. read from disk). */
  tokens?: AuthenticationResult;
  /** Called whenever the stored tokens change (login, automatic refresh, logout), e.g. to persist them. */
  onTokens?: (tokens: AuthenticationResult | undefined) => void;
  /** Per request; defaults to 30 s. A timeout is a NetworkError. */
  timeoutMs?: number;
}

/**
 * Creates a client of the platform API. Every request is signed (RFC 9421) with a fresh nonce and
 * idempotency key; operations that need a user send the stored bearer token, and on a 401 refresh it
 * once and retry once. A 503 with a short `Retry-After` (Redis restarting, revocations being restored, the
 * second of a Redis loss) is retried once after that delay, signed again. Errors are ApiError (with SPEC.md's
 * error body) or NetworkError.
 */
export function createClient(options: ClientOptions) {
  const { baseUrl, riskBaseUrl } = resolveBaseUrls(options.env, options.baseUrl, options.riskBaseUrl);
  let tokens = options.tokens;
  const tokenAccess = {
    get: () => tokens,
    set: (next: AuthenticationResult | undefined) => {
      tokens = next;
      options.onTokens?.(next);
    },
  };
  const transport = createTransport({
    baseUrls: { identity: baseUrl, risk: riskBaseUrl },
    signer: createSigner(options.keyId, options.key),
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    clock: options.clock ?? Date.now,
    timeoutMs: options.timeoutMs ?? 30_000,
    getTokens: tokenAccess.get,
    setTokens: tokenAccess.set,
  });
  return {
    env: options.env,
    baseUrl,
    riskBaseUrl,
    auth: authOperations(transport, tokenAccess),
    sessions: sessionOperations(transport),
    factors: factorOperations(transport),
    users: userOperations(transport),
    accounts: accountOperations(transport),
    audit: auditOperations(transport),
    stations: stationOperations(transport),
    /** The stored tokens, to persist them. */
    getTokens: (): AuthenticationResult | undefined => tokens,
    /** Replaces the stored tokens (e.g. restored from disk); `undefined` forgets them. Does not call `onTokens`. */
    setTokens: (next: AuthenticationResult | undefined): void => {
      tokens = next;
    },
    /** Sends any signed API request (an operation this SDK does not wrap yet, or a deliberately odd one in tests). */
    request: (request: ApiRequest): Promise<ApiResponse> => transport.send(request),
  };
}

/** The client `createClient` returns. */
export type Client = ReturnType<typeof createClient>;
