import type { Metric } from 'prom-client';

/** Where a metric is registered: a prom-client Registry of either exposition format. */
interface MetricRegistry {
  registerMetric(metric: Metric): void;
}

/** One series' counts: per bucket (not cumulative; the last slot is above the largest bound), sum and count. */
interface Series {
  labels: Readonly<Record<string, string>>;
  buckets: Float64Array;
  sum: number;
  count: number;
}

/** A value of a histogram as prom-client's registry formats it (`le` first, then the series' labels). */
interface ExportedValue {
  labels: Readonly<Record<string, string | number>>;
  sharedLabels: Readonly<Record<string, string>>;
  value: number;
  metricName: string;
}

interface Exported {
  name: string;
  help: string;
  type: 'histogram';
  aggregator: 'sum';
  values: ExportedValue[];
}

/**
 * A Prometheus histogram for the series observed on every answer (the request duration, an upstream's).
 * prom-client's `Histogram` checks and hashes the labels again at every observation, a labelled child
 * included (~0.8 µs a call, against ~0.03 µs for the arithmetic): here a series is found once, by its
 * caller, and an observation is a bucket search and three additions. The registry exposes it as it does
 * prom-client's own histograms (the same lines: cumulative `_bucket` per bound and `+Inf`, `_sum`,
 * `_count`), through the interface it reads every metric by (`getForPromString`, `get`, `reset`, name,
 * help, type and aggregator), so the registry's default labels, formats and merges apply unchanged.
 * `countedAs` exposes the series' counts as a counter too: one observation counts in both.
 */
export class SeriesHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, Series>();

  readonly name: string;
  readonly help: string;

  constructor(name: string, help: string, bounds: readonly number[], registry: MetricRegistry) {
    this.name = name;
    this.help = help;
    if (bounds.some((bound, i) => !Number.isFinite(bound) || (i > 0 && bound <= (bounds[i - 1] as number)))) {
      throw new Error(`${name}: bucket bounds must be finite and increasing`);
    }
    this.#bounds = [...bounds];
    // The registry reads a metric through the members below (getForPromString, get, reset) and the fields
    // above, as prom-client's own classes provide them; its types name only those classes.
    registry.registerMetric(this as unknown as Metric);
  }

  /**
   * The recorder of the series `labels` (found again by `key`, which must tell label sets apart): call it
   * with each observed value. Made once per series by the caller and kept; a value that is not a finite
   * number is refused, as prom-client refuses it.
   */
  series(key: string, labels: Readonly<Record<string, string>>): (value: number) => void {
    let series = this.#series.get(key);
    if (series === undefined) {
      series = { labels: { ...labels }, buckets: new Float64Array(this.#bounds.length + 1), sum: 0, count: 0 };
      this.#series.set(key, series);
    }
    const found = series;
    const bounds = this.#bounds;
    return (value) => {
      if (!Number.isFinite(value)) throw new TypeError(`${this.name}: value is not a finite number: ${String(value)}`);
      let i = 0;
      while (i < bounds.length && value > (bounds[i] as number)) i += 1;
      found.buckets[i] = (found.buckets[i] ?? 0) + 1;
      found.sum += value;
      found.count += 1;
    };
  }

  /**
   * What the registry formats into text (the form prom-client's histograms hand it): every series'
   * cumulative buckets, then its `+Inf`, `_sum` and `_count`, the series' labels apart from `le`.
   */
  async getForPromString(): Promise<Exported> {
    const values: ExportedValue[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const series of this.#series.values()) {
      let below = 0;
      this.#bounds.forEach((bound, i) => {
        below += series.buckets[i] ?? 0;
        values.push({ labels: { le: bound }, sharedLabels: series.labels, value: below, metricName: bucketName });
      });
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: series.labels, value: series.count, metricName: bucketName },
        { labels: {}, sharedLabels: series.labels, value: series.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: series.labels, value: series.count, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** The same values with each series' labels beside `le` (the registry's JSON, `getMetricsAsJSON`). */
  async get(): Promise<Exported> {
    const exported = await this.getForPromString();
    return { ...exported, values: exported.values.map(({ labels, sharedLabels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels }, sharedLabels: {} })) };
  }

  /**
   * A counter of the same series (`<name>` with their labels), registered on `registry`: each series'
   * `_count`, so that a request counted by `http_requests_total` is the one its duration was observed for,
   * with no second increment per answer.
   */
  countedAs(name: string, help: string, registry: MetricRegistry): void {
    const counts = (): Array<{ labels: Readonly<Record<string, string>>; value: number }> =>
      [...this.#series.values()].map((series) => ({ labels: series.labels, value: series.count }));
    const counter = {
      // Not readonly: the registry renames a counter when it writes OpenMetrics (`_total` added there).
      name,
      help,
      type: 'counter',
      aggregator: 'sum',
      get: async () => ({ name: counter.name, help, type: 'counter', aggregator: 'sum', values: counts() }),
      reset: () => this.reset(),
    };
    registry.registerMetric(counter as unknown as Metric);
  }

  /** Back to no observations (the registry's `resetMetrics`); recorders already handed out keep counting. */
  reset(): void {
    for (const series of this.#series.values()) {
      series.buckets.fill(0);
      series.sum = 0;
      series.count = 0;
    }
  }
}
