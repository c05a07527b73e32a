import { Counter, Gauge } from 'prom-client';
import { type Metrics, SeriesHistogram } from '@platform/service-kit';

/** Why the gateway refused a request itself; one label value each, so dashboards can tell attacks from bugs. */
export type RejectionReason =
  | 'unknown-operation'
  | 'fragment'
  | 'method-not-allowed'
  | 'idempotency-key-missing'
  | 'body-too-large'
  | 'signature'
  | 'rate-limited'
  | 'nonce-reused'
  | 'idempotency-key-reused'
  | 'bearer'
  | 'token-binding'
  | 'second-factor'
  | 'introspection-key'
  | 'redis-unavailable'
  | 'revocations-restoring'
  | 'signed-near-loss';

/** The gateway's own series, beside the request metrics every process has. */
export interface GatewayMetrics {
  rejected(reason: RejectionReason): void;
  /** A request of `keyId` refused by its rate limit (counted as a rejection too). */
  rateLimited(keyId: string): void;
  /** Times one upstream exchange; call the result with the outcome (a status code, `timeout` or `unreachable`). */
  upstreamTimer(upstream: string): (outcome: string) => void;
}

/** Registers the gateway's counters and histogram on the process registry. */
export function createGatewayMetrics(metrics: Metrics): GatewayMetrics {
  const rejections = new Counter({
    name: 'gateway_rejected_requests_total',
    help: 'API requests the gateway answered itself without proxying, by reason',
    labelNames: ['reason'],
    registers: [metrics.registry],
  });
  // Labelled by key id: only verified keys reach the rate limit, so the label has as many values as
  // GATEWAY_CLIENT_KEYS has keys, never one per attacker.
  const rateLimited = new Counter({
    name: 'gateway_rate_limited_requests_total',
    help: 'Signed requests refused with 429 by their client key\'s rate limit, by key id',
    labelNames: ['key_id'],
    registers: [metrics.registry],
  });
  const upstream = new SeriesHistogram(
    'gateway_upstream_duration_seconds',
    'Time from sending a request upstream to its response headers (or failure), by upstream and outcome',
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    metrics.registry,
  );
  // Each upstream and outcome's series found by a string key (the outcomes are statuses, `timeout` and `unreachable`).
  const upstreamSeries = new Map<string, (seconds: number) => void>();
  const observeUpstream = (name: string, outcome: string, seconds: number): void => {
    const key = `${name} ${outcome}`;
    let observe = upstreamSeries.get(key);
    if (observe === undefined) {
      observe = upstream.series(key, { upstream: name, outcome });
      upstreamSeries.set(key, observe);
    }
    observe(seconds);
  };
  return {
    rejected: (reason) => rejections.inc({ reason }),
    rateLimited: (keyId) => {
      rejections.inc({ reason: 'rate-limited' });
      rateLimited.inc({ key_id: keyId });
    },
    upstreamTimer: (name) => {
      const started = performance.now();
      return (outcome) => observeUpstream(name, outcome, (performance.now() - started) / 1000);
    },
  };
}

/** Counts the reads of GATEWAY_CLIENT_KEYS_FILE that changed something, by outcome (an alert for the invalid ones). */
export function clientKeysReloadCounter(metrics: Metrics): (outcome: string) => void {
  const reloads = new Counter({
    name: 'gateway_client_keys_reloads_total',
    help: 'Changes of GATEWAY_CLIENT_KEYS_FILE seen, by outcome: applied, or invalid/unreadable (the last valid keys stay in use)',
    labelNames: ['outcome'],
    registers: [metrics.registry],
  });
  for (const outcome of ['applied', 'invalid', 'unreadable']) reloads.inc({ outcome }, 0);
  return (outcome) => reloads.inc({ outcome });
}

/**
 * Whether GATEWAY_CLIENT_KEYS_FILE, as last read (every second), holds the keys in use: 1, or 0 while it is
 * invalid or unreadable. The counter above says that a change was refused; this says that the file is
 * still bad, for as long as it is, so the alert on it lasts until the file is fixed. 1 when no file is
 * configured (there is nothing to be invalid), so that dashboards and alerts always find it.
 */
export function clientKeysFileValidGauge(metrics: Metrics): (valid: boolean) => void {
  const valid = new Gauge({
    name: 'gateway_client_keys_file_valid',
    help: '1 while GATEWAY_CLIENT_KEYS_FILE as last read holds the client keys in use (or no file is configured), 0 while it is invalid or unreadable and the last valid keys stay in use',
    registers: [metrics.registry],
  });
  valid.set(1);
  return (isValid) => valid.set(isValid ? 1 : 0);
}
