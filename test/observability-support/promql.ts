// What the observability tests read from deploy/observability: the PromQL of the dashboards and alerts, the
// metric names it queries (parsed with Prometheus's own grammar, @prometheus-io/lezer-promql), and promtool,
// Prometheus's checker (Debian's `prometheus` package, which scripts/bootstrap.sh installs).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parser } from '@prometheus-io/lezer-promql';
import { parse } from 'yaml';
import { REPO_ROOT } from '../deploy-support/deployables.ts';

export const OBSERVABILITY = join(REPO_ROOT, 'deploy', 'observability');
export const DEPLOYABLE_NAMES = ['gateway', 'identity', 'risk'] as const;

/** One query of a dashboard panel. */
export interface PanelQuery {
  dashboard: string;
  panel: string;
  expr: string;
}

type Json = Record<string, unknown>;

/** A dashboard's JSON model. */
export function readDashboard(name: string): Json {
  return JSON.parse(readFileSync(join(OBSERVABILITY, 'grafana', 'dashboards', `${name}.json`), 'utf8')) as Json;
}

/** Every panel (rows' panels too) of a dashboard. */
export function panelsOf(dashboard: Json): Json[] {
  return ((dashboard.panels as Json[] | undefined) ?? []).flatMap((p) => [p, ...((p.panels as Json[] | undefined) ?? [])]);
}

/** Every query of a dashboard. */
export function queriesOf(name: string): PanelQuery[] {
  return panelsOf(readDashboard(name)).flatMap((panel) =>
    ((panel.targets as Json[] | undefined) ?? []).map((t) => ({ dashboard: name, panel: String(panel.title), expr: String(t.expr) })),
  );
}

/** A dashboard query as Prometheus would receive it from Grafana: its variables replaced by typical values. */
export function asPrometheusQuery(expr: string): string {
  return expr.replaceAll('$__rate_interval', '1m').replaceAll('$__range', '1h').replaceAll('$namespace', '.*');
}

/** The alerting rules of alerts.yml. */
export function alertRules(): Array<{ alert: string; expr: string }> {
  const file = parse(readFileSync(join(OBSERVABILITY, 'prometheus', 'alerts.yml'), 'utf8')) as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> };
  return file.groups.flatMap((g) => g.rules);
}

/**
 * The metric names a PromQL expression selects, and the selectors' `service` matchers; throws naming the
 * expression when the grammar finds an error in it.
 */
export function selectorsOf(expr: string): Array<{ metric: string; service: string | undefined }> {
  const tree = parser.parse(expr);
  const selectors: Array<{ metric: string; service: string | undefined }> = [];
  let broken = false;
  tree.iterate({
    enter(node) {
      if (node.type.isError) broken = true;
      if (node.name !== 'VectorSelector') return;
      const text = expr.slice(node.from, node.to);
      const metric = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(text)?.[0];
      if (metric === undefined) return;
      selectors.push({ metric, service: /\bservice="([^"]+)"/.exec(text)?.[1] });
    },
  });
  if (broken) throw new Error(`not valid PromQL: ${expr}`);
  return selectors;
}

/** promtool's path, or a failure that says how to get it: nothing here is skipped when it is missing. */
export async function promtool(args: readonly string[], cwd: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)('promtool', args, { cwd });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string; stderr?: string };
    if (e.code === 'ENOENT') throw new Error('promtool is not installed: run `bash scripts/bootstrap.sh` (it installs Debian\'s prometheus package)');
    return { code: typeof e.code === 'number' ? e.code : 1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/**
 * The names a scrape in the Prometheus text format declares (`# TYPE`), with the series names a histogram
 * or a summary adds (`_bucket`, `_sum`, `_count`).
 */
export function exportedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name!}${suffix}`);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(`${name!}${suffix}`);
  }
  return names;
}
