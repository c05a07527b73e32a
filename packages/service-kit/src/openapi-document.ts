// The one model of an OpenAPI 3.1 document that our code walks: its shape, its operations and its
// `$ref`s. The gateway's routing, reference page and merge, the services' numeric-parameter check and
// the fuzzer all read documents through it, so "which operations does this document have" has one answer.
//
// The shape is only the part that code here reads; every object also admits keys it does not name. A
// document comes from parsed YAML or JSON, so the walkers check what they step on, whatever the type says.

/** The methods an OpenAPI path item may name, in the order the operations of one path are listed. */
export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** A method key of a path item (lower case, as in the document). */
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** `{ $ref: '#/components/…' }`: a JSON pointer into the same document. */
export interface OpenApiReference {
  $ref: string;
  summary?: string;
  description?: string;
}

/** One alternative of `security`: the schemes it names, each with its scopes. `{}` is "no credentials needed". */
export type SecurityRequirement = Partial<Record<string, string[]>>;

/** A JSON Schema, left open: its readers narrow it to what they understand. */
export type JsonSchema = Record<string, unknown>;

export interface OpenApiParameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  description?: string;
  schema?: JsonSchema | OpenApiReference;
  example?: unknown;
  [key: string]: unknown;
}

export interface OpenApiMediaType {
  schema?: JsonSchema | OpenApiReference;
  [key: string]: unknown;
}

export interface OpenApiRequestBody {
  description?: string;
  required?: boolean;
  content?: Record<string, OpenApiMediaType>;
  [key: string]: unknown;
}

export interface OpenApiResponse {
  description?: string;
  headers?: Record<string, unknown>;
  content?: Record<string, OpenApiMediaType>;
  [key: string]: unknown;
}

export interface OpenApiOperation {
  operationId?: string;
  tags?: string[];
  summary?: string;
  description?: string;
  parameters?: Array<OpenApiParameter | OpenApiReference>;
  requestBody?: OpenApiRequestBody | OpenApiReference;
  responses?: Record<string, OpenApiResponse | OpenApiReference>;
  /** Replaces the document's `security` when present (`[]`: no credentials). */
  security?: SecurityRequirement[];
  [key: string]: unknown;
}

/** A path item: its operations by method, and what they share. */
export type OpenApiPathItem = { [M in HttpMethod]?: OpenApiOperation } & {
  summary?: string;
  description?: string;
  parameters?: Array<OpenApiParameter | OpenApiReference>;
  [key: string]: unknown;
};

export interface OpenApiDocument {
  openapi?: string;
  info?: Record<string, unknown>;
  servers?: unknown[];
  tags?: Array<{ name: string; [key: string]: unknown }>;
  /** Path template (`/v1/users/{userId}`) → path item. */
  paths?: Record<string, OpenApiPathItem>;
  /** Section (`schemas`, `parameters`, `responses`, …) → name → definition. */
  components?: Record<string, Record<string, unknown>>;
  security?: SecurityRequirement[];
  [key: string]: unknown;
}

/** One operation of a document, with what OpenAPI says applies to it from around it. */
export interface DocumentOperation {
  method: HttpMethod;
  /** The path template as documented. */
  path: string;
  operation: OpenApiOperation;
  /**
   * The path item's parameters, then the operation's, every `$ref` resolved; an operation's parameter
   * replaces the path item's of the same name and location (OpenAPI: it overrides, never removes).
   */
  parameters: OpenApiParameter[];
  /** The operation's own `security`, else the document's, else none. */
  security: SecurityRequirement[];
}

type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);
const methods: ReadonlySet<string> = new Set(HTTP_METHODS);

/** True when `key` of a path item names an operation (`parameters`, `summary`, `x-…` do not). */
export function isHttpMethod(key: string): key is HttpMethod {
  return methods.has(key);
}

/** True when `value` is a `$ref` object. */
export function isReference(value: unknown): value is OpenApiReference {
  return isObject(value) && typeof value.$ref === 'string';
}

/**
 * What a local `$ref` (`#/components/schemas/User`: a URI fragment holding a JSON pointer, RFC 6901)
 * names in `document`, one step, not following a `$ref` it finds there. Undefined when it names nothing
 * (or something in another document): only own keys count, so `#/components/toString` names nothing.
 */
export function resolveRef(document: OpenApiDocument, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  let pointer: string;
  try {
    pointer = decodeURIComponent(ref.slice(1));
  } catch {
    return undefined;
  }
  if (pointer === '') return document;
  if (!pointer.startsWith('/')) return undefined;
  let at: unknown = document;
  for (const token of pointer.slice(1).split('/')) {
    const key = token.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(at)) at = /^(0|[1-9][0-9]*)$/.test(key) ? at[Number(key)] : undefined;
    else if (isObject(at) && Object.hasOwn(at, key)) at = at[key];
    else return undefined;
  }
  return at;
}

/**
 * `node`, or where its chain of `$ref`s ends. Throws when a reference names nothing or the chain comes
 * back to a reference already followed: such a document is broken, and whoever reads it (at start)
 * should stop rather than read the missing part as empty. A schema that refers to itself further down
 * (a tree) is no cycle here: only the chain at the top is followed.
 */
export function deref<T>(document: OpenApiDocument, node: T | OpenApiReference): T {
  let current: unknown = node;
  const followed: string[] = [];
  while (isReference(current)) {
    const ref = current.$ref;
    if (followed.includes(ref)) throw new Error(`cyclic $ref: ${[...followed, ref].join(' → ')}`);
    followed.push(ref);
    current = resolveRef(document, ref);
    if (current === undefined) throw new Error(`$ref ${ref} names nothing in the document`);
  }
  return current as T;
}

function parametersOf(document: OpenApiDocument, shared: unknown, own: unknown): OpenApiParameter[] {
  const byKey = new Map<string, OpenApiParameter>();
  for (const list of [shared, own]) {
    if (!Array.isArray(list)) continue;
    for (const node of list) {
      const parameter: unknown = deref(document, node);
      if (!isObject(parameter)) continue;
      // An override keeps the overridden one's place, so the order is the document's.
      byKey.set(`${String(parameter.in)}\u0000${String(parameter.name)}`, parameter as OpenApiParameter);
    }
  }
  return [...byKey.values()];
}

/**
 * Every operation of `document`: path by path in the document's order, and within a path in
 * {@link HTTP_METHODS} order. Keys of a path item that are no method, and values that are no object,
 * are not operations. Throws when a parameter's `$ref` is broken (see {@link deref}).
 */
export function operationsOf(document: OpenApiDocument): DocumentOperation[] {
  const operations: DocumentOperation[] = [];
  const root: JsonObject = isObject(document) ? document : {};
  const paths = isObject(root.paths) ? root.paths : {};
  const documentSecurity: SecurityRequirement[] = Array.isArray(root.security) ? root.security : [];
  for (const [path, item] of Object.entries(paths)) {
    if (!isObject(item)) continue;
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (!isObject(operation)) continue;
      operations.push({
        method,
        path,
        operation: operation as OpenApiOperation,
        parameters: parametersOf(document, item.parameters, operation.parameters),
        security: Array.isArray(operation.security) ? operation.security : documentSecurity,
      });
    }
  }
  return operations;
}
