// What an OpenAPI document promises for a request: its operation and the statuses it lists, that the path
// has other methods only (405), or that the path is unknown (404). The operations are read with service-kit's
// operationsOf, as everywhere; which one a request names is written here for the tests on their own, from
// the OpenAPI rules (a literal path wins over a template; a parameter is one non-empty segment), so the
// gateway's own table is not checked against itself.
import { type OpenApiDocument, type OpenApiOperation, operationsOf } from '@platform/service-kit';

export type Json = Record<string, unknown>;

/** One documented operation. */
export interface DocumentedOperation {
  method: string;
  template: string;
  operation: OpenApiOperation;
  /** The statuses its `responses` list (`default` included when listed). */
  statuses: ReadonlySet<string>;
}

export type RouteVerdict =
  | { kind: 'operation'; operation: DocumentedOperation }
  | { kind: 'method-not-allowed'; template: string; allow: readonly string[] }
  | { kind: 'unknown' };

interface Template {
  template: string;
  segments: ReadonlyArray<string | undefined>;
  literals: number;
  operations: Map<string, DocumentedOperation>;
}

/** The operations of `document` (parsed JSON or YAML), to ask what it promises for a method and a raw path. */
export function documentedRoutes(document: Json): { operations: DocumentedOperation[]; verdict(method: string, path: string): RouteVerdict } {
  const byTemplate = new Map<string, Template>();
  const operations: DocumentedOperation[] = [];
  for (const { method, path: template, operation } of operationsOf(document as OpenApiDocument)) {
    const documented = { method: method.toUpperCase(), template, operation, statuses: new Set(Object.keys(operation.responses ?? {})) };
    let entry = byTemplate.get(template);
    if (entry === undefined) {
      const segments = template.split('/').slice(1).map((s) => (/^\{.+\}$/.test(s) ? undefined : s));
      byTemplate.set(template, (entry = { template, segments, literals: segments.filter((s) => s !== undefined).length, operations: new Map() }));
    }
    entry.operations.set(documented.method, documented);
    operations.push(documented);
  }
  const templates = [...byTemplate.values()].sort((a, b) => b.literals - a.literals);
  return {
    operations,
    verdict(method, path) {
      const segments = path.split('/').slice(1);
      const match = templates.find((t) => t.segments.length === segments.length && t.segments.every((s, i) => (s === undefined ? segments[i] !== '' : s === segments[i])));
      if (match === undefined || !path.startsWith('/')) return { kind: 'unknown' };
      const operation = match.operations.get(method);
      return operation === undefined ? { kind: 'method-not-allowed', template: match.template, allow: [...match.operations.keys()] } : { kind: 'operation', operation };
    },
  };
}

/** The statuses a request may be answered with under `verdict`. */
export function allowedStatuses(verdict: RouteVerdict): ReadonlySet<string> {
  if (verdict.kind === 'operation') return verdict.operation.statuses;
  return new Set([verdict.kind === 'unknown' ? '404' : '405']);
}

/** True when `status` is one `statuses` lists (directly, by range like `4XX`, or under `default`). */
export function isDocumented(statuses: ReadonlySet<string>, status: number): boolean {
  return statuses.has(String(status)) || statuses.has(`${String(status)[0]}XX`) || statuses.has('default');
}
