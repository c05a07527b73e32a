import type { RateLimitPolicy } from './rate-limits.ts';

/** Where a key stands against its policy after a request: what is left, and when the next unit frees. */
export interface Quota {
  remaining: number;
  /** Milliseconds until the oldest counted request leaves the window. */
  resetMs: number;
}

/**
 * The `RateLimit-Policy` and `RateLimit` fields of draft-ietf-httpapi-ratelimit-headers (-11): Structured
 * Field lists of one item each, the policy named by a string with `q` (quota), `w` (window, seconds), and
 * `r` (remaining) and `t` (seconds until the quota grows again, rounded up).
 */
export function rateLimitHeaders(policy: RateLimitPolicy, quota: Quota): { 'RateLimit-Policy': string; RateLimit: string } {
  const name = `"${policy.name}"`;
  return {
    'RateLimit-Policy': `${name};q=${policy.limit};w=${policy.windowS}`,
    RateLimit: `${name};r=${Math.max(0, quota.remaining)};t=${Math.max(0, Math.ceil(quota.resetMs / 1000))}`,
  };
}
