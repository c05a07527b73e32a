import { Agent, request } from 'node:http';
import autocannon from 'autocannon';
import type { HeaderMaker, RequestShape } from './signer.ts';

/** Where one scenario sends its requests and how each request's headers are made. */
export interface LoadTarget {
  /** Origin, e.g. `http://127.0.0.1:8080`. */
  origin: string;
  shape: RequestShape;
  /** Called once per request: a signer's fresh headers, or the same plain headers every time. */
  headers: HeaderMaker;
}

/** What one measured stretch of load gave. */
export interface LoadResult {
  /** Answers per second (all statuses) over the measured stretch. */
  rps: number;
  requests: number;
  /** Answers that were not 2xx, and connection errors or timeouts: any of either makes a figure suspect. */
  non2xx: number;
  errors: number;
  /** Latency percentiles in milliseconds, exact (not autocannon's whole-millisecond histogram). */
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  /** Status code → count. */
  statuses: Record<string, number>;
}

/** The q-quantile of sorted values (nearest rank). */
export function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}

/** Collects latencies and statuses, and sums them up at the end. */
class Recorder {
  private latencies = new Float64Array(1 << 16);
  private count = 0;
  readonly statuses: Record<string, number> = {};
  errors = 0;

  record(status: number, ms: number): void {
    if (this.count === this.latencies.length) {
      const grown = new Float64Array(this.latencies.length * 2);
      grown.set(this.latencies);
      this.latencies = grown;
    }
    this.latencies[this.count++] = ms;
    this.statuses[status] = (this.statuses[status] ?? 0) + 1;
  }

  result(elapsedS: number): LoadResult {
    const sorted = this.latencies.slice(0, this.count).sort();
    let sum = 0;
    for (const v of sorted) sum += v;
    const non2xx = Object.entries(this.statuses).reduce((n, [status, c]) => (status.startsWith('2') ? n : n + c), 0);
    return {
      rps: this.count / elapsedS,
      requests: this.count,
      non2xx,
      errors: this.errors,
      p50Ms: quantile(sorted, 0.5),
      p99Ms: quantile(sorted, 0.99),
      meanMs: this.count === 0 ? Number.NaN : sum / this.count,
      statuses: this.statuses,
    };
  }
}

/**
 * Closed-loop load with autocannon: `connections` clients, each sending its next request as soon as
 * the previous answer arrived, for `durationS`. Headers are made per request in `setupRequest`.
 */
export async function closedLoop(target: LoadTarget, connections: number, durationS: number): Promise<LoadResult> {
  const recorder = new Recorder();
  const started = process.hrtime.bigint();
  await new Promise<void>((resolve, reject) => {
    const instance = autocannon(
      {
        url: target.origin,
        connections,
        duration: durationS,
        timeout: 10,
        requests: [
          {
            method: target.shape.method,
            path: target.shape.target,
            body: target.shape.body,
            setupRequest: (req) => {
              req.headers = target.headers();
              return req;
            },
          },
        ],
      },
      (err: unknown) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve()),
    );
    instance.on('response', (_client, status, _bytes, ms) => recorder.record(status, ms));
    instance.on('reqError', () => {
      recorder.errors += 1;
    });
  });
  return recorder.result(Number(process.hrtime.bigint() - started) / 1e9);
}

/**
 * Open-loop load at a fixed rate per target, spaced evenly: autocannon's rate limit sends each second's
 * quota in one burst, which would measure queueing rather than the latency at a light rate. With
 * several targets the requests take turns (A, B, A, B, ...), so whatever stalls the machine (another
 * program, a noisy neighbour) stalls all of them alike and their latencies stay comparable. Each
 * latency is counted from the request's scheduled time, so a stall of the sender cannot hide a slow answer.
 *
 * At most `connections` requests are in flight to each target, as under the closed loop: a server that
 * falls behind the pace meets the same concurrency as there, and the backlog waits here, its wait still
 * counted in the latency. (With 256, a gateway behind 1,500 req/s held five times the closed loop's
 * requests, and its resident memory peak was that backlog's: bench/README.md.)
 */
export async function fixedRates(targets: readonly LoadTarget[], ratePerS: number, durationS: number, connections: number): Promise<LoadResult[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const prepared = targets.map((target) => ({
    target,
    url: new URL(target.shape.target, target.origin),
    body: target.shape.body === undefined ? undefined : Buffer.from(target.shape.body),
    recorder: new Recorder(),
  }));
  const total = Math.round(ratePerS * durationS) * prepared.length;
  const intervalNs = 1e9 / (ratePerS * prepared.length);
  const start = process.hrtime.bigint();
  let sent = 0;
  let settled = 0;
  await new Promise<void>((resolve) => {
    const settle = () => {
      settled += 1;
      if (settled === total) resolve();
    };
    const send = (n: number) => {
      const { target, url, body, recorder } = prepared[n % prepared.length] as (typeof prepared)[number];
      const scheduledNs = n * intervalNs;
      const headers: Record<string, string> = target.headers();
      if (body !== undefined) headers['content-length'] = String(body.length);
      const req = request(url, { method: target.shape.method, agent, headers }, (res) => {
        res.resume();
        res.on('end', () => {
          recorder.record(res.statusCode ?? 0, (Number(process.hrtime.bigint() - start) - scheduledNs) / 1e6);
          settle();
        });
      });
      req.on('error', () => {
        recorder.errors += 1;
        settle();
      });
      req.end(body);
    };
    const tick = () => {
      const elapsedNs = Number(process.hrtime.bigint() - start);
      while (sent < total && sent * intervalNs <= elapsedNs) send(sent++);
      if (sent < total) setTimeout(tick, 1);
    };
    tick();
  });
  agent.destroy();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return prepared.map(({ recorder }) => recorder.result(seconds));
}

/** Open-loop load at a fixed rate on one target (see `fixedRates`). */
export async function fixedRate(target: LoadTarget, ratePerS: number, durationS: number, connections: number): Promise<LoadResult> {
  const [result] = await fixedRates([target], ratePerS, durationS, connections);
  if (result === undefined) throw new Error('no result');
  return result;
}
