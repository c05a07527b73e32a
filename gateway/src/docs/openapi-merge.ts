import { isDeepStrictEqual } from 'node:util';
import { gatewayComponents, gatewayInfo, type SigningFacts } from './gateway-openapi.ts';

/** An OpenAPI 3.1 document as parsed from YAML: plain JSON values. */
export type OpenApiDocument = Record<string, unknown>;
type Json = Record<string, unknown>;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** Identity's key set is fetched by the gateway directly; it is not a public route (README, gateway). */
const NOT_ROUTED = new Set(['/.well-known/jwks.json']);

const obj = (value: unknown): Json => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {});

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
 * they define differently keeps identity's and renames risk's to `Risk<Name>` (with its refs).
 */
function mergeComponents(identity: OpenApiDocument, risk: OpenApiDocument): { components: Json; risk: OpenApiDocument } {
  const renames = new Map<string, string>();
  const ours = obj(identity.components);
  const theirs = obj(risk.components);
  for (const [section, entries] of Object.entries(theirs)) {
    if (section === 'securitySchemes') continue;
    for (const [name, definition] of Object.entries(obj(entries))) {
      const existing = obj(ours[section])[name];
      if (existing !== undefined && !isDeepStrictEqual(existing, definition)) {
        renames.set(`#/components/${section}/${name}`, `#/components/${section}/Risk${name}`);
      }
    }
  }
  const renamedRisk = obj(rewriteRefs(risk, renames));
  const components: Json = {};
  for (const section of new Set([...Object.keys(ours), ...Object.keys(obj(renamedRisk.components))])) {
    const merged: Json = { ...obj(ours[section]) };
    for (const [name, definition] of Object.entries(obj(obj(renamedRisk.components)[section]))) {
      merged[renames.has(`#/components/${section}/${name}`) ? `Risk${name}` : name] = definition;
    }
    components[section] = merged;
  }
  return { components, risk: renamedRisk };
}

/**
 * Drops components nothing reaches from the paths (identity's key-set schemas once its JWKS route is
 * left out), so the served document lints clean.
 */
function withoutUnusedComponents(doc: Json): Json {
  const components = obj(doc.components);
  const reached = new Set<string>();
  let frontier = refsIn(doc.paths);
  while (frontier.length > 0) {
    const next: string[] = [];
    for (const ref of frontier) {
      if (reached.has(ref)) continue;
      reached.add(ref);
      const [, , section, name] = ref.split('/');
      next.push(...refsIn(obj(components[section ?? ''])[name ?? '']));
    }
    frontier = next;
  }
  const kept: Json = {};
  for (const [section, entries] of Object.entries(components)) {
    kept[section] = section === 'securitySchemes' ? entries : Object.fromEntries(Object.entries(obj(entries)).filter(([name]) => reached.has(`#/components/${section}/${name}`)));
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

const QUOTA_HEADERS = {
  'RateLimit-Policy': { $ref: '#/components/headers/RateLimitPolicy' },
  RateLimit: { $ref: '#/components/headers/RateLimit' },
};

/** An operation as the gateway serves it: signed (and idempotency-keyed) on top of its own security. */
function gatewayOperation(operation: Json, documentSecurity: unknown): Json {
  const security = Array.isArray(operation.security) ? operation.security : Array.isArray(documentSecurity) ? documentSecurity : [];
  const signed = security.length === 0 ? [{ requestSignature: [] }] : security.map((req: unknown) => ({ ...obj(req), requestSignature: [] }));
  const parameters = [{ $ref: '#/components/parameters/IdempotencyKey' }, ...(Array.isArray(operation.parameters) ? operation.parameters : [])];
  const responses: Json = {};
  // Every answer to a signed request carries the key's quota (CONTRACT.md part 12); a shared ($ref)
  // answer cannot take headers here, its description in the document's info says so.
  for (const [status, response] of Object.entries(obj(operation.responses))) {
    const r = obj(response);
    responses[status] = typeof r.$ref === 'string' ? response : { ...r, headers: { ...obj(r.headers), ...QUOTA_HEADERS } };
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

function gatewayPaths(doc: OpenApiDocument): Json {
  const paths: Json = {};
  for (const [path, item] of Object.entries(obj(doc.paths))) {
    if (NOT_ROUTED.has(path)) continue;
    paths[path] = Object.fromEntries(
      Object.entries(obj(item)).map(([key, value]) => [key, METHODS.includes(key) ? gatewayOperation(obj(value), doc.security) : value]),
    );
  }
  return paths;
}

/**
 * The public API document: the identity and risk documents merged as the gateway serves them, with
 * the signing scheme and the idempotency header added to every operation, the quota headers on its own
 * answers, and the gateway's own answers (401 signature, 409 replay/duplicate, 429 rate limit,
 * 502/503/504) where an operation does not list them.
 */
export function mergeApiDocuments(identity: OpenApiDocument, risk: OpenApiDocument, facts: SigningFacts): OpenApiDocument {
  const { components, risk: renamedRisk } = mergeComponents(identity, risk);
  const identityPaths = gatewayPaths(identity);
  const riskPaths = gatewayPaths(renamedRisk);
  const clash = Object.keys(riskPaths).find((p) => p in identityPaths);
  if (clash !== undefined) throw new Error(`both documents define ${clash}`);
  const used = new Set(
    Object.values({ ...identityPaths, ...riskPaths }).flatMap((item) => Object.values(obj(item)).flatMap((op) => (Array.isArray(obj(op).tags) ? (obj(op).tags as unknown[]) : []))),
  );
  const tags = [...(Array.isArray(identity.tags) ? identity.tags : []), ...(Array.isArray(risk.tags) ? risk.tags : [])].filter((t) => used.has(obj(t).name));
  const gateway = gatewayComponents(facts);
  return withoutUnusedComponents({
    openapi: '3.1.0',
    info: gatewayInfo(facts, obj(identity.info), obj(risk.info)),
    servers: [{ url: '/', description: 'The gateway; one base URL serves both services.' }],
    tags,
    paths: { ...identityPaths, ...riskPaths },
    components: {
      ...components,
      securitySchemes: gateway.securitySchemes,
      parameters: { ...obj(components.parameters), ...gateway.parameters },
      headers: { ...obj(components.headers), ...gateway.headers },
      responses: { ...obj(components.responses), ...gateway.responses },
    },
  });
}
