import { type OpenApiDocument, type SecurityRequirement, operationsOf } from '@platform/service-kit';
import { type UpstreamName, type UpstreamRoute, isUnder } from './routes.ts';

/** One operation the gateway proxies: a method on a path template of the merged document. */
export interface GatewayOperation {
  /** Upper case, as on the wire. */
  method: string;
  /** The path template as documented, e.g. `/v1/users/unblock/{userId}` (also the metrics route label). */
  template: string;
  /** Which upstream serves it (by path prefix, CONTRACT.md part 1). */
  upstream: UpstreamName;
  /** True when the operation cannot be called without an access token (decided per operation). */
  needsBearer: boolean;
  /**
   * True when a security alternative of the operation takes an access token, required or not: a token sent
   * to it is checked as on every bearer operation (revocation, binding, second factor), never passed on unread.
   */
  acceptsBearer: boolean;
  /**
   * An `aal` 1 token of a user who must show a second factor suffices (the operation says
   * `x-first-factor-suffices: true`: enrolment, the second factor itself; CONTRACT.md part 15).
   */
  firstFactorSuffices: boolean;
  /** Only client keys whose entry says `"introspection": true` may call it (`x-client-key-introspection: true`; CONTRACT.md part 16). */
  introspectionKeysOnly: boolean;
}

/** The path of a request target (`req.originalUrl`) without its query: what the table matches and routes by. */
export function pathOf(target: string): string {
  const at = target.indexOf('?');
  return at === -1 ? target : target.slice(0, at);
}

/** What the table says of a request: its operation, or that its path template has other methods only. */
export type OperationMatch = { template: string } & ({ operation: GatewayOperation; allow?: undefined } | { operation?: undefined; allow: readonly string[] });

/** The operations of the merged document, looked up by method and raw request path. */
export interface OperationTable {
  /** Undefined when no documented path matches `path` (the request path as received, without its query). */
  match(method: string, path: string): OperationMatch | undefined;
  readonly operations: readonly GatewayOperation[];
}

interface PathEntry {
  template: string;
  /** Literal segments or `undefined` for a parameter (one non-empty segment). */
  segments: ReadonlyArray<string | undefined>;
  /** How many segments are literal: a literal path wins over a templated one that also matches. */
  literals: number;
  byMethod: ReadonlyMap<string, GatewayOperation>;
  allow: readonly string[];
}

/**
 * True when every security alternative of the operation includes `bearerAuth`. An operation with an
 * alternative without it (`security: []`, or `{}` beside `bearerAuth` where a token is optional) is
 * callable without one; the service behind it decides what a token it does get is worth.
 */
function requiresBearer(security: readonly SecurityRequirement[]): boolean {
  return security.length > 0 && security.every((requirement) => 'bearerAuth' in requirement);
}

function upstreamOf(template: string, routes: readonly UpstreamRoute[]): UpstreamName {
  const route = routes.find((r) => isUnder(r, template));
  if (route === undefined) throw new Error(`the API document names ${template}, which no upstream serves`);
  return route.name;
}

function segmentsOf(template: string): Array<string | undefined> {
  return template
    .split('/')
    .slice(1)
    .map((segment) => (/^\{[^{}]+\}$/.test(segment) ? undefined : segment));
}

/**
 * The gateway's allow-list (CONTRACT.md part 8): exactly the operations of the merged API document,
 * but those it answers itself (`x-served-by-gateway`).
 * Paths are matched on the raw request path, case-sensitively and segment by segment: a parameter is
 * one non-empty segment, so `//`, a trailing `/` or another spelling of a literal segment matches
 * nothing. Methods are the documented ones only (no implicit HEAD or OPTIONS), as the services answer.
 */
export function operationTable(document: OpenApiDocument, routes: readonly UpstreamRoute[]): OperationTable {
  const operations: GatewayOperation[] = [];
  const byTemplate = new Map<string, Map<string, GatewayOperation>>();
  for (const { method, path: template, security, operation } of operationsOf(document)) {
    // The discovery (CONTRACT.md part 16) is the gateway's own: never proxied, so in no upstream's table.
    if (operation['x-served-by-gateway'] === true) continue;
    const entry: GatewayOperation = {
      method: method.toUpperCase(),
      template,
      upstream: upstreamOf(template, routes),
      needsBearer: requiresBearer(security),
      acceptsBearer: security.some((requirement) => 'bearerAuth' in requirement),
      firstFactorSuffices: (operation as { 'x-first-factor-suffices'?: unknown })['x-first-factor-suffices'] === true,
      introspectionKeysOnly: (operation as { 'x-client-key-introspection'?: unknown })['x-client-key-introspection'] === true,
    };
    let byMethod = byTemplate.get(template);
    if (byMethod === undefined) byTemplate.set(template, (byMethod = new Map()));
    byMethod.set(entry.method, entry);
    operations.push(entry);
  }
  const entries = [...byTemplate].map(([template, byMethod]): PathEntry => {
    const segments = segmentsOf(template);
    return { template, segments, literals: segments.filter((s) => s !== undefined).length, byMethod, allow: [...byMethod.keys()] };
  });
  // A path without parameters is found by one lookup; the templated ones are tried with the most literal
  // segments first, so the first match is the one OpenAPI says wins (a literal path beats a template).
  const exact = new Map(entries.filter((e) => e.literals === e.segments.length).map((e) => [e.template, e]));
  const templated = entries.filter((e) => e.literals < e.segments.length).sort((a, b) => b.literals - a.literals);
  const matchTemplated = (path: string): PathEntry | undefined => {
    const segments = path.split('/');
    return templated.find(
      (e) => e.segments.length === segments.length - 1 && e.segments.every((s, i) => (s === undefined ? segments[i + 1] !== '' : s === segments[i + 1])),
    );
  };
  return {
    operations,
    match(method, path) {
      const entry = exact.get(path) ?? (path.startsWith('/') ? matchTemplated(path) : undefined);
      if (entry === undefined) return undefined;
      const operation = entry.byMethod.get(method);
      return operation === undefined ? { template: entry.template, allow: entry.allow } : { template: entry.template, operation };
    },
  };
}
