import fc from 'fast-check';
import { type OpenApiDocument, type OpenApiParameter, deref, operationsOf } from '@platform/service-kit';

/** The part of JSON Schema (OpenAPI 3.1) the services' documents use. */
export interface Schema {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  /** Documented sample values (OpenAPI's `example`, JSON Schema's `examples`): real ids, cities, districts. */
  example?: unknown;
  examples?: unknown[];
}

/** A parameter's schema (as the part of JSON Schema above) with the parameter's own `example` among its examples. */
function schemaOf(p: OpenApiParameter): Schema {
  const schema = (p.schema ?? {}) as Schema;
  return p.example === undefined ? schema : { ...schema, examples: [...(schema.examples ?? []), p.example] };
}

/** One documented operation: what the sampler needs to build requests for it. */
export interface Operation {
  id: string;
  method: string;
  /** The path template, e.g. `/v1/accounts/{userId}`. */
  path: string;
  pathParams: Record<string, Schema>;
  queryParams: Record<string, { schema: Schema; required: boolean }>;
  /** The JSON body's schema, when the operation takes one. */
  body: Schema | undefined;
  /** True when the operation can be called without an access token (an alternative of its security lacks `bearerAuth`). */
  anonymous: boolean;
}

/** Every operation under /v1 of a parsed OpenAPI document (a service's, or the gateway's merged one). */
export function operationsOfDocument(doc: OpenApiDocument): { doc: OpenApiDocument; operations: Operation[] } {
  const operations = operationsOf(doc)
    .filter(({ path }) => path.startsWith('/v1/'))
    .map(({ method, path, operation, parameters, security }): Operation => ({
      id: operation.operationId as string,
      method: method.toUpperCase(),
      path,
      pathParams: Object.fromEntries(parameters.filter((p) => p.in === 'path').map((p) => [p.name, schemaOf(p)])),
      queryParams: Object.fromEntries(parameters.filter((p) => p.in === 'query').map((p) => [p.name, { schema: schemaOf(p), required: p.required === true }])),
      body: deref(doc, operation.requestBody)?.content?.['application/json']?.schema as Schema | undefined,
      anonymous: security.length === 0 || security.some((requirement) => !('bearerAuth' in requirement)),
    }));
  return { doc, operations };
}

function stringOf(schema: Schema): fc.Arbitrary<string> {
  const minLength = schema.minLength ?? 0;
  const maxLength = Math.min(schema.maxLength ?? 40, 300);
  const fit = (arb: fc.Arbitrary<string>) => arb.filter((s) => s.length >= minLength && s.length <= (schema.maxLength ?? Infinity));
  switch (schema.format) {
    case 'email':
      return fit(fc.emailAddress());
    case 'uuid':
      return fc.uuid();
    case 'uri':
      return fit(fc.webUrl());
    case 'date-time':
      return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
  }
  if (schema.pattern !== undefined) {
    const pattern = new RegExp(schema.pattern, 'u');
    // A pattern that only excludes characters (`^[^…]*$`, the names' and free text's): any Unicode text
    // without them, since stringMatching would draw from ASCII alone and names would lose their Unicode.
    if (/^\^\[\^[^\]]*\]\*\$$/.test(schema.pattern)) {
      return fit(fc.string({ minLength, maxLength, unit: 'grapheme' }).map((text) => [...text].filter((char) => pattern.test(char)).join('')));
    }
    return fit(fc.stringMatching(pattern));
  }
  return fc.string({ minLength, maxLength, unit: 'grapheme' });
}

/** Values that satisfy `schema` (on-schema input); its documented examples half of the time. */
export function valid(doc: OpenApiDocument, node: Schema, depth = 0): fc.Arbitrary<unknown> {
  const schema = deref(doc, node);
  const examples = [...(schema.examples ?? []), ...(schema.example === undefined ? [] : [schema.example])];
  const generated = generatedValue(doc, schema, depth);
  return examples.length === 0 ? generated : fc.oneof(fc.constantFrom(...examples), generated);
}

function generatedValue(doc: OpenApiDocument, schema: Schema, depth: number): fc.Arbitrary<unknown> {
  if (schema.enum !== undefined) return fc.constantFrom(...schema.enum);
  if (schema.const !== undefined) return fc.constant(schema.const);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      return stringOf(schema);
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000 });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'array': {
      const items = valid(doc, schema.items ?? {}, depth + 1);
      const constraints = { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 5, 5) };
      return schema.uniqueItems ? fc.uniqueArray(items, { ...constraints, selector: (v) => JSON.stringify(v) }) : fc.array(items, constraints);
    }
    case 'object': {
      const properties = schema.properties ?? {};
      const model = Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, valid(doc, v, depth + 1)]));
      return fc.record(model, { requiredKeys: (schema.required ?? []).filter((k) => k in properties) });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

const SQL = ["' OR '1'='1", "'; DROP TABLE users; --", '1; SELECT pg_sleep(5)', "admin'--", '%', '_', '\\', "\\'; --"];
const UNICODE = ['İstanbul', 'ŞANLIURFA', '\u202eevil', 'a\u200bb', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢', '😀👍🏽', 'e\u0301', '\ud800', '\uffff', 'ﷺ'.repeat(50)];
const NUL = ['\u0000', 'a\u0000b', 'admin@example.com\u0000.evil', '%00'];
const POLLUTION_KEYS = ['__proto__', 'constructor', 'prototype'];
const POLLUTION_VALUE = { isAdmin: true, roles: ['ADMIN'], polluted: 'yes', prototype: { polluted: 'yes' } };

/** JSON text spliced into a body as it is: values too deep for this process's own JSON.stringify. */
export class RawJson {
  readonly text: string;
  readonly label: string;

  constructor(text: string, label: string) {
    this.text = text;
    this.label = label;
  }

  /** How fast-check prints it in a counterexample. */
  [fc.toStringMethod](): string {
    return `<${this.label}>`;
  }
}

/** JSON bytes of a generated value, with every RawJson spliced in verbatim. */
export function jsonBytes(value: unknown): Buffer {
  const raws: string[] = [];
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (!(v instanceof RawJson)) return v;
    raws.push(v.text);
    return `\u0000raw:${raws.length - 1}\u0000`;
  });
  return Buffer.from((text ?? 'null').replace(/"\\u0000raw:(\d+)\\u0000"/g, (_m, i: string) => raws[Number(i)] ?? 'null'));
}

/** Arrays or objects nested `depth` deep: cheap to send, costly for a naive recursive walker. */
const nested = fc
  .tuple(fc.integer({ min: 20, max: 5000 }), fc.constantFrom('array', 'object'))
  .map(([depth, kind]) =>
    kind === 'array'
      ? new RawJson(`${'['.repeat(depth)}${']'.repeat(depth)}`, `array nested ${depth} deep`)
      : new RawJson(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`, `object nested ${depth} deep`),
  );

/** Numbers JSON can spell but JavaScript cannot hold (JSON.parse makes them ±Infinity or 0). */
const nonFiniteJson = fc.constantFrom(new RawJson('1e400', '1e400'), new RawJson('-1e400', '-1e400'), new RawJson('1e-400', '1e-400'));

/** Text that JavaScript's Number() takes for a number, but that no numeric parameter may be written as. */
export const NUMBER_LOOKALIKES = ['Infinity', '-Infinity', 'NaN', '1e400', '-1e400', '0x10', '0b1', '1e1', ' 1', '1 ', '+1', '1.', '.5', '1_000'];

/** A value of the wrong kind for anything: types, sizes, encodings and payloads a parser or a query may trip on. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(null, true, false, 0, -1, 1.5, -0, 1e308, 2 ** 53 + 1, '', ' ', [], {}, [null], '0', 'null', 'NaN', 'true'),
  fc.constantFrom(...NUMBER_LOOKALIKES),
  nonFiniteJson,
  fc.constantFrom(...SQL, ...UNICODE, ...NUL),
  fc.integer({ min: 256, max: 60_000 }).map((n) => 'A'.repeat(n)),
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.constant(Object.fromEntries(POLLUTION_KEYS.map((k) => [k, POLLUTION_VALUE]))),
  nested,
  fc.jsonValue({ maxDepth: 3 }),
);

/** Adds a key that no schema allows, including the prototype-pollution ones, as an own property. */
function withExtraKey(value: Record<string, unknown>, key: string, extra: unknown): Record<string, unknown> {
  const copy = { ...value };
  Object.defineProperty(copy, key, { value: extra, enumerable: true, configurable: true, writable: true });
  return copy;
}

/** Input off `schema`: one property hostile, a required one missing, an extra key, or the whole body hostile. */
export function mutated(doc: OpenApiDocument, node: Schema): fc.Arbitrary<unknown> {
  const schema = deref(doc, node);
  const base = valid(doc, schema);
  const keys = Object.keys(schema.properties ?? {});
  if (keys.length === 0) return fc.oneof(hostileValue, base);
  const asObject = base.map((v) => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {}));
  const stringKeys = keys.filter((k) => deref(doc, schema.properties?.[k] ?? {}).type === 'string');
  const replaced = (key: fc.Arbitrary<string>, bad: fc.Arbitrary<unknown>) => fc.tuple(asObject, key, bad).map(([v, k, b]) => ({ ...v, [k]: b }));
  return fc.oneof(
    // Text that is the right type but hostile content reaches the code past the validator: the likeliest place for a 500.
    ...(stringKeys.length > 0 ? [{ weight: 3, arbitrary: replaced(fc.constantFrom(...stringKeys), fc.constantFrom(...SQL, ...UNICODE, ...NUL)) }] : []),
    { weight: 2, arbitrary: replaced(fc.constantFrom(...keys), hostileValue) },
    { weight: 1, arbitrary: fc.tuple(asObject, fc.constantFrom(...keys)).map(([v, k]) => Object.fromEntries(Object.entries(v).filter(([key]) => key !== k))) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(asObject, fc.constantFrom(...POLLUTION_KEYS, 'id', 'passwordHash', 'failedLoginCount', 'isAdmin'), fc.oneof(hostileValue, fc.constant(POLLUTION_VALUE)))
        .map(([v, k, extra]) => withExtraKey(v, k, extra)),
    },
    { weight: 1, arbitrary: hostileValue },
  );
}

/** A path parameter value: a valid one, or hostile text (still a single, percent-encoded segment). */
export function pathValue(doc: OpenApiDocument, schema: Schema): fc.Arbitrary<string> {
  const text = fc.oneof(
    valid(doc, schema).map(String),
    hostileValue.map((v) => (typeof v === 'string' ? v : jsonBytes(v).toString()).slice(0, 1000)),
  );
  return fc.oneof(
    // A lone surrogate cannot be percent-encoded as UTF-8; its raw bytes are among the oddities below.
    { weight: 4, arbitrary: text.map((t) => encodeURIComponent(t.toWellFormed())) },
    // Already encoded oddities: broken escapes, encoded slashes and dots, an encoded NUL, overlong and surrogate UTF-8.
    { weight: 1, arbitrary: fc.constantFrom('%', '%E0%A4%A', '%ZZ', '..%2F..%2Fetc%2Fpasswd', '%2e%2e', '%00', 'a%2Fb', '%C0%AF', '%ED%A0%80') },
  );
}
