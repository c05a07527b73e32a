/** One client key's rate limit (CONTRACT.md part 12): at most `limit` requests per `windowS` seconds. */
export interface RateLimitPolicy {
  /** The policy's name in the RateLimit headers: the key id it was configured for, or `default` (`*`). */
  name: string;
  limit: number;
  windowS: number;
}

/** GATEWAY_RATE_LIMITS parsed: a policy per named key id, and the one for every other key. */
export interface RateLimits {
  policyFor(keyId: string): RateLimitPolicy;
  /** Every configured policy, `*` first (for the start-up log line). */
  readonly policies: readonly RateLimitPolicy[];
}

/** CONTRACT.md part 12: each environment sets its own; this is what applies where none is set. */
export const DEFAULT_RATE_LIMITS_JSON = '{"*":{"limit":10000,"windowS":1}}';

const KEY_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const MAX_LIMIT = 10_000_000;
const MAX_WINDOW_S = 86_400;

function policyOf(name: string, entry: unknown): RateLimitPolicy {
  const at = name === 'default' ? '"*"' : `"${name}"`;
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new Error(`${at} must be an object { "limit": N, "windowS": S }`);
  const { limit, windowS, ...rest } = entry as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw new Error(`${at}: unknown field ${unknown.map((k) => `"${k}"`).join(', ')}`);
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new Error(`${at}: limit must be an integer from 1 to ${MAX_LIMIT}`);
  if (typeof windowS !== 'number' || !Number.isInteger(windowS) || windowS < 1 || windowS > MAX_WINDOW_S) {
    throw new Error(`${at}: windowS must be an integer from 1 to ${MAX_WINDOW_S}`);
  }
  return { name, limit, windowS };
}

/**
 * Parses GATEWAY_RATE_LIMITS: a JSON object from key id (or `*` for every other key) to
 * `{ "limit": N, "windowS": S }`. `*` is required, so that no key is ever without a limit.
 */
export function parseRateLimits(raw: string): RateLimits {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error('must be a JSON object from key id (or "*") to { "limit": N, "windowS": S }');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('must be a JSON object from key id (or "*") to { "limit": N, "windowS": S }');
  const entries = Object.entries(parsed as Record<string, unknown>);
  const fallback = entries.find(([keyId]) => keyId === '*');
  if (fallback === undefined) throw new Error('must have a "*" entry: the limit of every key not named');
  const byKey = new Map<string, RateLimitPolicy>();
  for (const [keyId, entry] of entries) {
    if (keyId === '*') continue;
    if (!KEY_ID.test(keyId)) throw new Error(`"${keyId.slice(0, 128)}" is not a key id (1-128 characters of [A-Za-z0-9._:-])`);
    byKey.set(keyId, policyOf(keyId, entry));
  }
  const other = policyOf('default', fallback[1]);
  return {
    policyFor: (keyId) => byKey.get(keyId) ?? other,
    policies: [other, ...byKey.values()],
  };
}
