import { isDeepStrictEqual } from 'node:util';
import { type OpenApiDocument, type OpenApiOperation, type OpenApiPathItem, type SecurityRequirement, isReference, operationsOf, resolveRef } from '@platform/service-kit';
import { DISCOVERY_SCHEMAS, DISCOVERY_TAG, discoveryPaths } from '../discovery/discovery-openapi.ts';
import { CACHE_HEADERS, QUOTA_HEADERS, gatewayComponents, gatewayInfo, type SigningFacts } from './gateway-openapi.ts';

type Components = NonNullable<OpenApiDocument['components']>;

/**
 * Identity's key set is fetched by the gateway directly, never routed: at that path the gateway publishes
 * the keys it verifies with itself (discovery/).
 */
const NOT_ROUTED = new Set(['/.well-known/jwks.json']);

/** Every `$ref` in `value` rewritten through `renames` (old ref → new ref). */
function rewriteRefs(value: unknown, renames: ReadonlyMap<string, string>): unknown {
  if (Array.isArray(value)) return value.map((v) => rewriteRefs(v, renames));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' ? (renames.get(v) ?? v) : rewriteRefs(v, renames)]),
  );
}

/**
 * The components of both documents in one set. A name both define identically is kept once; a name
 * they define differently keeps identity's and renames risk's to `Risk<Name>`, in risk's document too
 * (definitions and refs), so that document still resolves on its own.
 */
function mergeComponents(identity: OpenApiDocument, risk: OpenApiDocument): { components: Components; risk: OpenApiDocument } {
  const renames = new Map<string, string>();
  const ours = identity.components ?? {};
  const theirs = risk.components ?? {};
  for (const [section, entries] of Object.entries(theirs)) {
    if (section === 'securitySchemes') continue;
    for (const [name, definition] of Object.entries(entries)) {
      const existing = ours[section]?.[name];
      if (existing !== undefined && !isDeepStrictEqual(existing, definition)) {
        renames.set(`#/components/${section}/${name}`, `#/components/${section}/Risk${name}`);
      }
    }
  }
  const rewritten = rewriteRefs(risk, renames) as OpenApiDocument;
  const riskComponents: Components = Object.fromEntries(
    Object.entries(rewritten.components ?? {}).map(([section, entries]) => [
      section,
      Object.fromEntries(Object.entries(entries).map(([name, definition]) => [renames.has(`#/components/${section}/${name}`) ? `Risk${name}` : name, definition])),
    ]),
  );
  const components: Components = {};
  for (const section of new Set([...Object.keys(ours), ...Object.keys(riskComponents)])) {
    components[section] = { ...ours[section], ...riskComponents[section] };
  }
  return { components, risk: { ...rewritten, components: riskComponents } };
}

/**
 * Drops components nothing reaches from the paths (what only a path left out used), so the served
 * document lints clean. A component is kept whole, whatever part of it a reference names.
 */
function withoutUnusedComponents(doc: OpenApiDocument): OpenApiDocument {
  const components = doc.components ?? {};
  const reached = new Set<string>();
  let frontier = refsIn(doc.paths);
  while (frontier.length > 0) {
    const next: string[] = [];
    for (const ref of frontier) {
      const component = ref.split('/').slice(0, 4).join('/');
      if (reached.has(component)) continue;
      reached.add(component);
      next.push(...refsIn(resolveRef(doc, component)));
    }
    frontier = next;
  }
  const kept: Components = {};
  for (const [section, entries] of Object.entries(components)) {
    kept[section] = section === 'securitySchemes' ? entries : Object.fromEntries(Object.entries(entries).filter(([name]) => reached.has(`#/components/${section}/${name}`)));
  }
  return { ...doc, components: kept };
}

function refsIn(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) refsIn(v, out);
  else if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else refsIn(v, out);
    }
  }
  return out;
}

/** An operation as the gateway serves it: signed (and idempotency-keyed) on top of its own security. */
function gatewayOperation(operation: OpenApiOperation, security: readonly SecurityRequirement[]): OpenApiOperation {
  const signed = security.length === 0 ? [{ requestSignature: [] }] : security.map((requirement) => ({ ...requirement, requestSignature: [] }));
  const parameters = [{ $ref: '#/components/parameters/IdempotencyKey' }, ...(operation.parameters ?? [])];
  const responses: NonNullable<OpenApiOperation['responses']> = {};
  // Every answer to a signed request carries the key's quota (CONTRACT.md part 12); a shared ($ref)
  // answer cannot take headers here, its description in the document's info says so.
  for (const [status, response] of Object.entries(operation.responses ?? {})) {
    if (isReference(response)) {
      responses[status] = response;
      continue;
    }
    // A station answer (it carries an ETag, CONTRACT.md part 17) may come from the gateway's cache.
    const cached = response.headers !== undefined && 'ETag' in response.headers ? CACHE_HEADERS : {};
    responses[status] = { ...response, headers: { ...response.headers, ...QUOTA_HEADERS, ...cached } };
  }
  const added: Record<string, string> = {
    '401': 'InvalidSignature',
    '409': 'GatewayConflict',
    '429': 'GatewayRateLimited',
    '502': 'BadGateway',
    '503': 'GatewayUnavailable',
    '504': 'GatewayTimeout',
  };
  for (const [status, name] of Object.entries(added)) responses[status] ??= { $ref: `#/components/responses/${name}` };
  return { ...operation, security: signed, parameters, responses };
}

/** The routed path items of `doc`, each operation in its place as the gateway serves it. */
function gatewayPaths(doc: OpenApiDocument): Record<string, OpenApiPathItem> {
  const paths: Record<string, OpenApiPathItem> = {};
  for (const [path, item] of Object.entries(doc.paths ?? {})) if (!NOT_ROUTED.has(path)) paths[path] = { ...item };
  for (const { method, path, operation, security } of operationsOf(doc)) {
    const item = paths[path];
    if (item !== undefined) item[method] = gatewayOperation(operation, security);
  }
  return paths;
}

/**
 * The public API document: the identity and risk documents merged as the gateway serves them, with
 * the signing scheme and the idempotency header added to every operation, the quota headers on its own
 * answers, and the gateway's own answers (401 signature, 409 replay/duplicate, 429 rate limit,
 * 502/503/504) where an operation does not list them; and the discovery paths the gateway serves
 * itself, unsigned (`x-served-by-gateway`, never proxied).
 */
export function mergeApiDocuments(identity: OpenApiDocument, risk: OpenApiDocument, facts: SigningFacts): OpenApiDocument {
  const { components, risk: renamedRisk } = mergeComponents(identity, risk);
  const identityPaths = gatewayPaths(identity);
  const riskPaths = gatewayPaths(renamedRisk);
  const ownPaths = discoveryPaths();
  const all = [identityPaths, riskPaths, ownPaths].flatMap((paths) => Object.keys(paths));
  const clash = all.find((path, at) => all.indexOf(path) !== at);
  if (clash !== undefined) throw new Error(`${clash} is defined twice`);
  const used = new Set(
    [identity, renamedRisk].flatMap((doc) =>
      operationsOf(doc)
        .filter((o) => !NOT_ROUTED.has(o.path))
        .flatMap((o) => o.operation.tags ?? []),
    ),
  );
  const tags = [...(identity.tags ?? []), ...(risk.tags ?? [])].filter((t) => used.has(t.name)).concat(DISCOVERY_TAG);
  const gateway = gatewayComponents(facts);
  return withoutUnusedComponents({
    openapi: '3.1.0',
    info: gatewayInfo(facts, identity.info ?? {}, risk.info ?? {}),
    servers: [{ url: '/', description: 'The gateway; one base URL serves both services.' }],
    tags,
    paths: { ...identityPaths, ...riskPaths, ...ownPaths },
    components: {
      ...components,
      schemas: { ...components.schemas, ...DISCOVERY_SCHEMAS },
      securitySchemes: gateway.securitySchemes,
      parameters: { ...components.parameters, ...gateway.parameters },
      headers: { ...components.headers, ...gateway.headers },
      responses: { ...components.responses, ...gateway.responses },
    },
  });
}
