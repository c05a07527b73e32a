import { ApiError, NetworkError, errorBodyOf } from './errors.ts';
import { utf8Bytes } from './signing/encoding.ts';
import { signRequest } from './signing/sign-request.ts';
import type { Signer } from './signing/signer.ts';
import type { AuthenticationResult } from './types.ts';

/** Which base URL a path lives under (SPEC.md: `{base_url}` and `{risk_base_url}`). */
export type Service = 'identity' | 'risk';


/** Per-call options of every operation. */
export interface CallOptions {
  /**
   * The `X-Idempotency-Key` of this call. Leave it out and each call gets a fresh one; pass the same
   * key again to retry a POST whose outcome is unknown (NetworkError, 5xx) without doing it twice.
   */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

/** One API call, before signing. */
export interface ApiRequest {
  service: Service;
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** The path with its parameters already percent-encoded. */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  /** Sent as JSON. */
  body?: unknown;
  /**
   * Send the stored access token (when the client holds one) and, on a 401, refresh it once and retry
   * once. False for login, refresh, logout and password reset, which never carry a bearer token.
   */
  bearer: boolean;
  /** `manual` returns a 3xx answer instead of following it. */
  redirect?: 'follow' | 'manual';
  /**
   * Keep the answer's ETag and, next time, ask with If-None-Match: a 304 gives back the kept answer
   * (CONTRACT.md part 17; the city and district lists, which change only when the station data does).
   */
  revalidate?: boolean;
  options?: CallOptions;
}

/** A successful (2xx, or 3xx with `redirect: 'manual'`) answer. */
export interface ApiResponse {
  status: number;
  headers: Headers;
  /** The parsed JSON body; `undefined` when the body is empty. */
  body: unknown;
}

/** What the transport needs from the client. */
export interface TransportConfig {
  baseUrls: Record<Service, string>;
  signer: Signer;
  fetch: typeof fetch;
  /** Milliseconds since the epoch. */
  clock: () => number;
  timeoutMs: number;
  getTokens: () => AuthenticationResult | undefined;
  setTokens: (tokens: AuthenticationResult | undefined) => void;
}

/** Sends signed API calls and owns the refresh-once-on-401 rule. */
export interface Transport {
  send(request: ApiRequest): Promise<ApiResponse>;
  /** Exchanges the stored refresh token once, however many calls ask at the same time. */
  refreshStoredTokens(): Promise<boolean>;
}

const SIGNATURE_FAULT = 'Invalid request signature';
/**
 * The longest `Retry-After` of a 503 that the transport waits out itself. The platform's say 1 s (CONTRACT.md
 * part 13); a longer wait is the caller's to decide, with the ApiError's `retryAfterS`.
 */
const MAX_RETRY_AFTER_S = 5;
const VISIBLE_ASCII = /^[\x21-\x7e]{1,255}$/;

interface Attempt {
  status: number;
  statusText: string;
  headers: Headers;
  text: string;
  url: URL;
}

/** Waits `ms`, or rejects with the reason of `signal` as soon as it aborts (the caller's own abort is theirs). */
function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return new Promise((resolve) => setTimeout(resolve, ms));
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** How many revalidated answers a client keeps (the 81 cities' district lists and the city list fit). */
const KEPT_ANSWERS = 256;

/** Builds the transport of one client. */
export function createTransport(config: TransportConfig): Transport {
  let refreshing: Promise<boolean> | undefined;
  /** Answers kept for revalidation, by URL: the same for every user, so one client may keep them across logins. */
  const kept = new Map<string, { etag: string; text: string }>();

  function urlOf(request: ApiRequest): URL {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(request.query ?? {})) if (value !== undefined) search.append(name, String(value));
    const query = search.toString();
    return new URL(`${config.baseUrls[request.service].replace(/\/+$/, '')}${request.path}${query === '' ? '' : `?${query}`}`);
  }

  async function attempt(request: ApiRequest, accessToken: string | undefined, idempotencyKey: string): Promise<Attempt> {
    const url = urlOf(request);
    const body = request.body === undefined ? undefined : utf8Bytes(JSON.stringify(request.body));
    const signed = await signRequest(
      {
        method: request.method,
        url,
        idempotencyKey,
        body,
        authorization: accessToken === undefined ? undefined : `Bearer ${accessToken}`,
        created: Math.floor(config.clock() / 1000),
      },
      config.signer,
    );
    const headers: Record<string, string> = { accept: 'application/json', ...signed };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const held = request.revalidate === true ? kept.get(url.href) : undefined;
    if (held !== undefined) headers['if-none-match'] = held.etag;
    const timeout = AbortSignal.timeout(config.timeoutMs);
    const signal = request.options?.signal ? AbortSignal.any([request.options.signal, timeout]) : timeout;
    try {
      const res = await config.fetch(url, { method: request.method, headers, body, redirect: request.redirect ?? 'follow', signal });
      const text = await res.text();
      if (request.revalidate === true) {
        // Not modified: the kept answer is still the current one.
        if (res.status === 304 && held !== undefined) return { status: 200, statusText: 'OK', headers: res.headers, text: held.text, url };
        const etag = res.headers.get('etag');
        if (res.status === 200 && etag !== null) {
          kept.delete(url.href);
          kept.set(url.href, { etag, text });
          if (kept.size > KEPT_ANSWERS) kept.delete(kept.keys().next().value as string);
        }
      }
      return { status: res.status, statusText: res.statusText, headers: res.headers, text, url };
    } catch (err) {
      // The caller's own abort is theirs to handle; everything else means "no answer".
      if (request.options?.signal?.aborted) throw request.options.signal.reason;
      throw new NetworkError(request.method, url.href, err);
    }
  }

  /**
   * One attempt; when it answers 503 with a `Retry-After` of at most MAX_RETRY_AFTER_S seconds, one more after
   * that delay, signed again (a fresh nonce and `created`). The idempotency key stays: a 503 left it free
   * (the gateway releases it after any 5xx or never claimed it), so the retry cannot do anything twice. Two
   * exceptions answer the retry 409 `Duplicate request detected`: the first request is still upstream (the
   * gateway's own deadline answered it), or the upstream made its change after that 503 (the key is kept).
   */
  async function attemptRidingOut503(request: ApiRequest, accessToken: string | undefined, idempotencyKey: string): Promise<Attempt> {
    const first = await attempt(request, accessToken, idempotencyKey);
    const retryAfter = first.status === 503 ? /^\s*(\d+)\s*$/.exec(first.headers.get('retry-after') ?? '')?.[1] : undefined;
    if (retryAfter === undefined || Number(retryAfter) > MAX_RETRY_AFTER_S) return first;
    await delay(Number(retryAfter) * 1000, request.options?.signal);
    return attempt(request, accessToken, idempotencyKey);
  }

  function apiError(request: ApiRequest, answer: Attempt, message?: string): ApiError {
    const body = errorBodyOf(answer.status, answer.statusText, answer.text, answer.url.pathname + answer.url.search);
    if (message !== undefined) body.message = message;
    return new ApiError(answer.status, body, { method: request.method, url: answer.url.href, headers: answer.headers });
  }

  function result(request: ApiRequest, answer: Attempt): ApiResponse {
    const redirected = request.redirect === 'manual' && answer.status >= 300 && answer.status < 400;
    if ((answer.status < 200 || answer.status >= 300) && !redirected) throw apiError(request, answer);
    if (answer.text === '') return { status: answer.status, headers: answer.headers, body: undefined };
    try {
      return { status: answer.status, headers: answer.headers, body: JSON.parse(answer.text) as unknown };
    } catch {
      throw apiError(request, answer, 'The answer is not valid JSON');
    }
  }

  async function refreshStoredTokens(): Promise<boolean> {
    const stored = config.getTokens();
    if (stored?.refreshToken === undefined) return false;
    const request: ApiRequest = { service: 'identity', method: 'POST', path: '/v1/auth/refresh', body: { refreshToken: stored.refreshToken }, bearer: false };
    const answer = await attemptRidingOut503(request, undefined, crypto.randomUUID()).catch(() => undefined);
    if (answer === undefined) return false;
    if (answer.status === 200) {
      config.setTokens(result(request, answer).body as AuthenticationResult);
      return true;
    }
    // A refused refresh token means the session is over (rotated, revoked or expired): forget it, unless
    // the refusal was about our signature or someone stored other tokens meanwhile.
    const refused = answer.status === 401 && errorBodyOf(401, '', answer.text, '').message !== SIGNATURE_FAULT;
    if (refused && config.getTokens()?.refreshToken === stored.refreshToken) config.setTokens(undefined);
    return false;
  }

  function refreshOnce(): Promise<boolean> {
    refreshing ??= refreshStoredTokens().finally(() => {
      refreshing = undefined;
    });
    return refreshing;
  }

  async function send(request: ApiRequest): Promise<ApiResponse> {
    const explicitKey = request.options?.idempotencyKey;
    if (explicitKey !== undefined && !VISIBLE_ASCII.test(explicitKey)) throw new TypeError('idempotencyKey must be 1-255 visible ASCII characters');
    const token = request.bearer ? config.getTokens()?.accessToken : undefined;
    const first = await attemptRidingOut503(request, token, explicitKey ?? crypto.randomUUID());
    const retryable =
      first.status === 401 && token !== undefined && errorBodyOf(401, '', first.text, '').message !== SIGNATURE_FAULT;
    if (!retryable) return result(request, first);
    // Another call may already have refreshed while this one was in flight; then its token is used.
    const current = config.getTokens()?.accessToken;
    const fresh = current !== undefined && current !== token ? current : (await refreshOnce()) ? config.getTokens()?.accessToken : undefined;
    if (fresh === undefined) return result(request, first);
    // The gateway keeps an idempotency key claimed after a 401, so the retry needs a new one (and a new nonce).
    return result(request, await attemptRidingOut503(request, fresh, crypto.randomUUID()));
  }

  return { send, refreshStoredTokens: refreshOnce };
}
