import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { readCompose } from './deploy-support/compose-checks.ts';
import { DEPLOYABLES, REPO_ROOT, imageEnv, portOf } from './deploy-support/deployables.ts';
import { kustomizeBuild } from './deploy-support/kustomize.ts';
import { DEPLOYABLE_NAMES, OBSERVABILITY, alertRules, asPrometheusQuery, panelsOf, promtool, queriesOf, readDashboard, selectorsOf } from './observability-support/promql.ts';

type Json = Record<string, unknown>;
const PROMETHEUS = join(OBSERVABILITY, 'prometheus');

// Static checks of deploy/observability and the monitoring overlays. Which metrics the processes really
// export is checked against a scrape of the running stack: test/e2e/observability-metrics.test.ts.
describe('observability files (deploy/observability, deploy/k8s/*/monitoring)', () => {
  describe('alerting rules (prometheus/alerts.yml)', () => {
    it('pass promtool check rules', async () => {
      const { code, output } = await promtool(['check', 'rules', 'alerts.yml'], PROMETHEUS);
      assert.equal(code, 0, output);
      assert.match(output, /SUCCESS: \d+ rules found/);
    });

    it('pass their unit tests (promtool test rules alerts.test.yml)', async () => {
      const { code, output } = await promtool(['test', 'rules', 'alerts.test.yml'], PROMETHEUS);
      assert.equal(code, 0, output);
    });

    it('each alert is seen firing in a unit test, and the issue\'s alerts are all there', () => {
      const tests = parse(readFileSync(join(PROMETHEUS, 'alerts.test.yml'), 'utf8')) as { tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }> };
      const fired = new Set(tests.tests.flatMap((t) => t.alert_rule_test.filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname)));
      const alerts = alertRules().map((r) => r.alert);
      assert.deepEqual(alerts.filter((a) => !fired.has(a)), []);
      // 5xx ratio, p99, readiness flapping, an attack's rejections, credential stuffing (issue 19).
      for (const name of ['PlatformHighErrorRatio', 'PlatformHighLatencyP99', 'PlatformReadinessFlapping', 'GatewayRejectionSpike', 'IdentityCredentialStuffing']) {
        assert.ok(alerts.includes(name), name);
      }
    });

    it('are the same groups as the PrometheusRule of the monitoring overlays', () => {
      const rule = parseAllDocuments(readFileSync(join(REPO_ROOT, 'deploy', 'k8s', 'base', 'monitoring', 'prometheus-rule.yaml'), 'utf8'))[0]!.toJSON() as Json;
      const file = parse(readFileSync(join(PROMETHEUS, 'alerts.yml'), 'utf8')) as Json;
      assert.deepEqual((rule.spec as Json).groups, file.groups);
    });
  });

  describe('Grafana dashboards (grafana/dashboards/*.json)', () => {
    for (const name of DEPLOYABLE_NAMES) {
      it(`${name}: a dashboard of its own, every query valid PromQL on ${name}'s own series`, () => {
        const dashboard = readDashboard(name);
        assert.equal(dashboard.uid, `platform-${name}`);
        const panels = panelsOf(dashboard);
        assert.equal(new Set(panels.map((p) => p.id)).size, panels.length, 'panel ids repeat');
        for (const panel of panels) {
          const { x, w } = panel.gridPos as { x: number; w: number };
          assert.ok(x >= 0 && x + w <= 24, `${String(panel.title)} does not fit the grid`);
        }
        const queries = queriesOf(name);
        assert.ok(queries.length > 10);
        for (const { panel, expr } of queries) {
          const selectors = selectorsOf(asPrometheusQuery(expr));
          assert.ok(selectors.length > 0, `${panel}: ${expr}`);
          // Every series of the dashboard is the deployable's own (processes label theirs with `service`).
          for (const s of selectors) assert.equal(s.service, name, `${panel}: ${s.metric} is not filtered on service="${name}"`);
        }
      });
    }

    it('show what the issue asks: rate, errors, latency percentiles by route, health of Redis/Postgres, event-loop lag, heap; at the gateway rejections by reason and rate-limited clients', () => {
      for (const name of DEPLOYABLE_NAMES) {
        const exprs = queriesOf(name).map((q) => q.expr);
        const has = (pattern: RegExp, what: string) => assert.ok(exprs.some((e) => pattern.test(e)), `${name}: no panel for ${what}`);
        has(/sum by \(route\) \(rate\(http_requests_total/, 'the request rate by route');
        has(/status=~"5\.\."/, '5xx errors');
        for (const q of ['0.5', '0.95', '0.99']) has(new RegExp(`histogram_quantile\\(${q}, sum by \\(le, route\\) \\(rate\\(http_request_duration_seconds_bucket`), `p${q} by route`);
        has(/dependency_up/, 'Redis and Postgres health');
        has(/nodejs_eventloop_lag_p99_seconds/, 'event-loop lag');
        has(/nodejs_heap_size_used_bytes/, 'the heap');
      }
      const gateway = queriesOf('gateway').map((q) => q.expr);
      assert.ok(gateway.some((e) => /sum by \(reason\) \(rate\(gateway_rejected_requests_total/.test(e)), 'rejections by reason');
      assert.ok(gateway.some((e) => /sum by \(key_id\) \(rate\(gateway_rate_limited_requests_total/.test(e)), 'rate-limited clients');
      assert.ok(queriesOf('identity').some((q) => /identity_login_attempts_total/.test(q.expr)), 'login outcomes');
    });

    it('every query passes promtool (type-checked as a recording rule)', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'dashboards-'));
      try {
        const rules = DEPLOYABLE_NAMES.flatMap((name) => queriesOf(name).map((q, i) => ({ record: `dashboard:${name}_${i}`, expr: asPrometheusQuery(q.expr) })));
        await writeFile(join(dir, 'queries.yml'), JSON.stringify({ groups: [{ name: 'dashboards', rules }] }));
        const { code, output } = await promtool(['check', 'rules', 'queries.yml'], dir);
        assert.equal(code, 0, output);
        assert.match(output, new RegExp(`SUCCESS: ${rules.length} rules found`));
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });

    it('the 5xx-ratio and upstream-failure panels answer 0 where nothing failed, with traffic and without any, not "No data" (promtool test rules)', async () => {
      const failures = (name: string) => queriesOf(name).filter((q) => /status=~"5\.\."|outcome=~"5\.\.\|timeout\|unreachable"/.test(q.expr));
      const ratios = DEPLOYABLE_NAMES.map((name) => [name, failures(name).filter((q) => q.expr.includes('http_requests_total'))] as const);
      const upstream = failures('gateway').filter((q) => q.expr.includes('gateway_upstream_duration_seconds_count'));
      for (const [name, queries] of ratios) assert.equal(queries.length, 1, `${name}: one 5xx-ratio query`);
      assert.equal(upstream.length, 1, 'one upstream-failure query');
      const at = (expr: string, samples: Array<[string, number]>) => ({
        expr: asPrometheusQuery(expr),
        eval_time: '5m',
        exp_samples: samples.map(([labels, value]) => ({ labels, value })),
      });
      const ok = (name: string, status: string, perMinute: number) => ({
        series: `http_requests_total{service="${name}",method="GET",route="/v1/weather-stations/get-cities",status="${status}"}`,
        values: `0+${perMinute}x10`,
      });
      const proxied = (name: string, outcome: string, perMinute: number) => ({ series: `gateway_upstream_duration_seconds_count{service="gateway",upstream="${name}",outcome="${outcome}"}`, values: `0+${perMinute}x10` });
      const tests = [
        // Traffic, nothing failed: 0 for each deployable, and for each upstream.
        {
          interval: '1m',
          input_series: [...DEPLOYABLE_NAMES.map((name) => ok(name, '200', 60)), proxied('identity', '200', 60), proxied('risk', '404', 60)],
          promql_expr_test: [
            ...ratios.map(([, [q]]) => at(q!.expr, [['{}', 0]])),
            at(upstream[0]!.expr, [['{upstream="identity"}', 0], ['{upstream="risk"}', 0]]),
          ],
        },
        // No traffic at all (a fresh environment): 0 as well.
        { interval: '1m', input_series: [], promql_expr_test: [...ratios.map(([, [q]]) => at(q!.expr, [['{}', 0]])), at(upstream[0]!.expr, [['{}', 0]])] },
        // Failures still show as before: the ratio, and each failing outcome beside the upstream that had none.
        {
          interval: '1m',
          input_series: [ok('risk', '200', 45), ok('risk', '503', 15), proxied('identity', '200', 54), proxied('identity', '502', 6), proxied('risk', '200', 60)],
          promql_expr_test: [at(ratios[2]![1][0]!.expr, [['{}', 0.25]]), at(upstream[0]!.expr, [['{upstream="identity",outcome="502"}', 0.1], ['{upstream="risk"}', 0]])],
        },
      ];
      const dir = await mkdtemp(join(tmpdir(), 'dashboards-zero-'));
      try {
        await writeFile(join(dir, 'zero.test.yml'), JSON.stringify({ rule_files: [], evaluation_interval: '1m', tests }));
        const { code, output } = await promtool(['test', 'rules', 'zero.test.yml'], dir);
        assert.equal(code, 0, output);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  });

  describe('ServiceMonitors (deploy/k8s/overlays/<env>/monitoring)', () => {
    for (const env of ['local', 'test', 'prod'] as const) {
      it(`${env}: one per deployable, in platform-${env}, on the Service port that serves /metrics`, () => {
        const monitoring = kustomizeBuild(join(REPO_ROOT, 'deploy', 'k8s', 'overlays', env, 'monitoring'));
        const services = kustomizeBuild(join(REPO_ROOT, 'deploy', 'k8s', 'overlays', env)).filter((o) => o.kind === 'Service');
        assert.ok(monitoring.every((o) => o.metadata.namespace === `platform-${env}`));
        const monitors = monitoring.filter((o) => o.kind === 'ServiceMonitor');
        assert.deepEqual(monitors.map((m) => m.metadata.name).sort(), ['gateway', 'identity', 'risk']);
        for (const monitor of monitors) {
          const spec = monitor.spec as { selector: { matchLabels: Record<string, string> }; endpoints: Array<{ port: string; path: string }> };
          const selected = services.filter((s) => Object.entries(spec.selector.matchLabels).every(([k, v]) => s.metadata.labels?.[k] === v));
          assert.deepEqual(selected.map((s) => s.metadata.name), [monitor.metadata.name]);
          const ports = ((selected[0]!.spec as Json).ports as Array<{ name: string }>).map((p) => p.name);
          // The gateway's metrics are on its management port only (CONTRACT.md part 10), the services' on their
          // metrics port: the one port of each that Prometheus may reach (the NetworkPolicies).
          assert.deepEqual(spec.endpoints.map((e) => [e.port, e.path]), [[monitor.metadata.name === 'gateway' ? 'management' : 'metrics', '/metrics']]);
          assert.ok(ports.includes(spec.endpoints[0]!.port));
        }
        assert.equal(monitoring.filter((o) => o.kind === 'PrometheusRule').length, 1);
      });
    }
  });

  describe('compose profile `observability`', () => {
    it('runs Prometheus, Grafana and an OTLP collector only on request, provisioned from files that exist', () => {
      const { services } = readCompose(REPO_ROOT) as unknown as { services: Record<string, { profiles?: string[]; volumes?: string[] }> };
      for (const name of ['prometheus', 'grafana', 'jaeger']) {
        assert.deepEqual(services[name]?.profiles, ['observability'], name);
        for (const volume of services[name]?.volumes ?? []) {
          const source = volume.split(':')[0]!;
          assert.ok(existsSync(join(REPO_ROOT, source)), `${name} mounts ${source}, which is not there`);
        }
      }
      for (const name of ['gateway', 'identity', 'risk', 'postgres', 'redis']) assert.equal(services[name]?.profiles, undefined, `${name} must run without a profile`);
    });

    it('scrapes each deployable where its image serves /metrics (the gateway on its management port); so does the local config, on pnpm start\'s ports', async () => {
      const targetsOf = (file: string) => {
        const config = parse(readFileSync(join(PROMETHEUS, file), 'utf8')) as { scrape_configs: Array<{ job_name: string; static_configs: Array<{ targets: string[] }> }> };
        return Object.fromEntries(config.scrape_configs.map((c) => [c.job_name, c.static_configs.flatMap((s) => s.targets)]));
      };
      const compose = targetsOf('prometheus.yml');
      const local = targetsOf('prometheus.local.yml');
      for (const d of DEPLOYABLES) {
        const key = d.managementPortKey ?? d.portKey;
        assert.deepEqual(compose[d.name], [`${d.name}:${portOf(d, imageEnv(REPO_ROOT, d), key)}`]);
        assert.deepEqual(local[d.name], [`127.0.0.1:${String(d.spec[key]?.default)}`]);
      }
      const { code, output } = await promtool(['check', 'config', 'prometheus.local.yml'], PROMETHEUS);
      assert.equal(code, 0, output);
    });
  });
});
