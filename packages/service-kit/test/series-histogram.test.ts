import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Counter, Histogram, Registry, type RegistryContentType } from 'prom-client';
import { SeriesHistogram } from '../src/index.ts';

const BOUNDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const LABEL_NAMES = ['method', 'route', 'status'] as const;
type Labels = Record<(typeof LABEL_NAMES)[number], string>;

/** The same observations through prom-client's own Histogram and Counter (the oracle) and through SeriesHistogram. */
function both(contentType: RegistryContentType = Registry.PROMETHEUS_CONTENT_TYPE) {
  const oracle = new Registry<RegistryContentType>();
  const ours = new Registry<RegistryContentType>();
  for (const registry of [oracle, ours]) {
    registry.setContentType(contentType);
    registry.setDefaultLabels({ service: 'test' });
  }
  const histogram = new Histogram({ name: 'http_request_duration_seconds', help: 'Time, by method, route and status', labelNames: LABEL_NAMES, buckets: BOUNDS, registers: [oracle] });
  const counter = new Counter({ name: 'http_requests_total', help: 'Requests, by method, route and status', labelNames: LABEL_NAMES, registers: [oracle] });
  const series = new SeriesHistogram('http_request_duration_seconds', 'Time, by method, route and status', BOUNDS, ours);
  series.countedAs('http_requests_total', 'Requests, by method, route and status', ours);
  const recorders = new Map<string, (value: number) => void>();
  const observe = (labels: Labels, value: number): void => {
    histogram.observe(labels, value);
    counter.inc(labels);
    const key = `${labels.method} ${labels.status} ${labels.route}`;
    let record = recorders.get(key);
    if (record === undefined) {
      record = series.series(key, labels);
      recorders.set(key, record);
    }
    record(value);
  };
  /** The exposition of each registry, the oracle's metrics in the order ours registers them. */
  const texts = async (): Promise<[string, string]> => {
    const names = ['http_request_duration_seconds', 'http_requests_total'];
    const oracleText = (await Promise.all(names.map((name) => oracle.getSingleMetricAsString(name)))).join('\n\n');
    const ourText = (await Promise.all(names.map((name) => ours.getSingleMetricAsString(name)))).join('\n\n');
    return [oracleText, ourText];
  };
  return { oracle, ours, observe, texts };
}

const labelsArbitrary = fc.record({
  method: fc.constantFrom('GET', 'POST', 'DELETE'),
  route: fc.constantFrom('/v1/weather-stations/by/id/{stationId}', '/v1/auth/login', 'unmatched'),
  status: fc.constantFrom('200', '304', '401', '404', '503'),
});
// Values on the bounds, between them, below the first and above the last.
const valueArbitrary = fc.oneof(fc.constantFrom(...BOUNDS, 0, 7.5, 100), fc.double({ min: 0, max: 20, noNaN: true }));

describe('SeriesHistogram: the request duration histogram and counter without prom-client\'s per-observation label work', () => {
  it('exposes exactly what prom-client\'s Histogram and Counter expose for the same observations, in the Prometheus text format', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(labelsArbitrary, valueArbitrary), { maxLength: 200 }), async (observations) => {
        const { observe, texts } = both();
        for (const [labels, value] of observations) observe(labels, value);
        const [oracleText, ourText] = await texts();
        assert.equal(ourText, oracleText);
      }),
      { numRuns: 100 },
    );
  });

  it('exposes exactly what prom-client exposes in OpenMetrics too (the counter named with _total there)', async () => {
    const { observe, oracle, ours } = both(Registry.OPENMETRICS_CONTENT_TYPE);
    observe({ method: 'GET', route: '/v1/auth/login', status: '200' }, 0.003);
    observe({ method: 'GET', route: '/v1/auth/login', status: '200' }, 0.7);
    observe({ method: 'POST', route: 'unmatched', status: '404' }, 0.0001);
    // Registered in another order: compared metric by metric, as the registry writes each.
    const ourText = await ours.metrics();
    const oracleText = await oracle.metrics();
    const blocks = (text: string) => text.replace('# EOF\n', '').split(/\n(?=# HELP)/).map((block) => block.trim()).sort();
    assert.deepEqual(blocks(ourText), blocks(oracleText));
    assert.match(ourText, /^http_requests_total\{method="GET",route="\/v1\/auth\/login",status="200",service="test"\} 2$/m);
  });

  it('gives the registry\'s JSON what prom-client gives it (labels and le together)', async () => {
    const { observe, oracle, ours } = both();
    observe({ method: 'GET', route: '/v1/auth/login', status: '200' }, 0.02);
    observe({ method: 'DELETE', route: 'unmatched', status: '401' }, 3);
    const byName = (metrics: Array<{ name: string }>) => [...metrics].sort((a, b) => a.name.localeCompare(b.name));
    const strip = (metrics: Array<Record<string, unknown>>) =>
      metrics.map(({ name, help, type, values }) => ({
        name,
        help,
        type: String(type),
        values: (values as Array<{ labels: object; value: number; metricName?: string }>).map(({ labels, value, metricName }) => ({ labels, value, metricName })),
      }));
    assert.deepEqual(strip(byName(await ours.getMetricsAsJSON()) as never), strip(byName(await oracle.getMetricsAsJSON()) as never));
  });

  it('starts again from nothing when the registry resets its metrics; recorders handed out keep counting', async () => {
    const { observe, oracle, ours, texts } = both();
    observe({ method: 'GET', route: '/v1/auth/login', status: '200' }, 0.02);
    oracle.resetMetrics();
    ours.resetMetrics();
    observe({ method: 'GET', route: '/v1/auth/login', status: '200' }, 0.2);
    const [oracleText, ourText] = await texts();
    assert.match(ourText, /^http_request_duration_seconds_count\{[^}]*status="200"\} 1$/m);
    assert.match(ourText, /^http_request_duration_seconds_sum\{[^}]*\} 0\.2$/m);
    // prom-client forgets a reset series until it is observed again: the same series, the same numbers.
    assert.equal(ourText, oracleText);
  });

  it('refuses a value that is not a finite number, as prom-client does, and bounds that are not increasing', () => {
    const registry = new Registry();
    const histogram = new SeriesHistogram('refusing_seconds', 'help', [0.1, 1], registry);
    const record = histogram.series('a', { a: '1' });
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY]) assert.throws(() => record(value), TypeError);
    for (const bounds of [[1, 0.1], [0.1, 0.1], [0.1, Number.POSITIVE_INFINITY]]) {
      assert.throws(() => new SeriesHistogram('bad_seconds', 'help', bounds, new Registry()), /increasing/);
    }
  });
});
