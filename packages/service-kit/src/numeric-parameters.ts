import { readFileSync } from 'node:fs';
import type { RequestHandler } from 'express';
import { parse } from 'yaml';
import { BadRequestError } from '@platform/errors';
import { type OpenApiDocument, type OpenApiParameter, deref, operationsOf } from './openapi-document.ts';

/** A numeric path or query parameter of one operation, with its documented bounds. */
interface NumericParameter {
  name: string;
  in: 'path' | 'query';
  integer: boolean;
  minimum: number;
  maximum: number;
}

interface OperationParameters {
  /**
   * Matches the raw request path and captures the path parameters in template order. As loosely as
   * Express and the validator route (any letter case, a trailing slash): run only once the validator has
   * named the operation, it must find the values of every path it routed there.
   */
  path: RegExp;
  pathNames: string[];
  numeric: NumericParameter[];
}

const INTEGER = /^-?[0-9]+$/;
const DECIMAL = /^-?[0-9]+(\.[0-9]+)?$/;
const INT32 = { minimum: -(2 ** 31), maximum: 2 ** 31 - 1 };
/** The longest raw value a message repeats. */
const SHOWN = 40;

function numericParameter(doc: OpenApiDocument, parameter: OpenApiParameter): NumericParameter | undefined {
  const schema = deref(doc, parameter.schema) ?? {};
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  if ((type !== 'integer' && type !== 'number') || (parameter.in !== 'path' && parameter.in !== 'query')) return undefined;
  const bounds = schema.format === 'int32' ? INT32 : { minimum: type === 'integer' ? Number.MIN_SAFE_INTEGER : -Number.MAX_VALUE, maximum: type === 'integer' ? Number.MAX_SAFE_INTEGER : Number.MAX_VALUE };
  return {
    name: String(parameter.name),
    in: parameter.in,
    integer: type === 'integer',
    minimum: typeof schema.minimum === 'number' ? Math.max(schema.minimum, bounds.minimum) : bounds.minimum,
    maximum: typeof schema.maximum === 'number' ? Math.min(schema.maximum, bounds.maximum) : bounds.maximum,
  };
}

/** The raw-path pattern of a path template, capturing its parameters, and their names in order. */
function pathPattern(template: string): Pick<OperationParameters, 'path' | 'pathNames'> {
  const pathNames: string[] = [];
  const source = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{([^{}]+)\}/g, (_m, name: string) => {
    pathNames.push(name);
    return '([^/]+)';
  });
  return { path: new RegExp(`^${source}/?$`, 'i'), pathNames };
}

/** The numeric parameters of every operation of the document, by operationId. */
function numericParametersOf(doc: OpenApiDocument): Map<string, OperationParameters> {
  const operations = new Map<string, OperationParameters>();
  for (const { path, operation, parameters } of operationsOf(doc)) {
    if (typeof operation.operationId !== 'string') continue;
    const numeric = parameters.map((p) => numericParameter(doc, p)).filter((p) => p !== undefined);
    if (numeric.length > 0) operations.set(operation.operationId, { ...pathPattern(path), numeric });
  }
  return operations;
}

function expected(parameter: NumericParameter): string {
  const kind = parameter.integer ? 'an integer' : 'a finite decimal number';
  const example = parameter.integer ? '42' : '-12.5';
  return `${kind} from ${parameter.minimum} to ${parameter.maximum}, in plain digits like ${example}`;
}

function problemOf(parameter: NumericParameter, raw: string): string | undefined {
  const value = Number(raw);
  const wellFormed = (parameter.integer ? INTEGER : DECIMAL).test(raw);
  if (wellFormed && Number.isFinite(value) && value >= parameter.minimum && value <= parameter.maximum) return undefined;
  const shown = raw.length > SHOWN ? `${raw.slice(0, SHOWN)}…` : raw;
  return `${parameter.in}.${parameter.name} must be ${expected(parameter)}, got ${JSON.stringify(shown)}`;
}

function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * Every numeric path and query parameter of the document must be written as a plain decimal number and
 * be finite and inside its documented bounds (CONTRACT.md part 7), else 400. The validator alone lets
 * through what JavaScript's number coercion accepts: `Infinity`, `1e400`, `0x10`, a blank; `Infinity`
 * even passes Ajv's integer and bound checks. Mounted after the validator, on its operationId; it reads
 * the values as sent, not as coerced.
 */
export function strictNumericParameters(apiSpec: string): RequestHandler {
  const operations = numericParametersOf(parse(readFileSync(apiSpec, 'utf8')) as OpenApiDocument);
  return (req, _res, next) => {
    const operationId = (req as { openapi?: { schema?: { operationId?: string } } }).openapi?.schema?.operationId;
    const operation = operationId === undefined ? undefined : operations.get(operationId);
    if (operation === undefined) {
      next();
      return;
    }
    const at = req.originalUrl.indexOf('?');
    const query = new URLSearchParams(at === -1 ? '' : req.originalUrl.slice(at + 1));
    const pathValues = operation.path.exec(at === -1 ? req.originalUrl : req.originalUrl.slice(0, at))?.slice(1) ?? [];
    const problems: string[] = [];
    for (const parameter of operation.numeric) {
      const raws = parameter.in === 'query' ? query.getAll(parameter.name) : [pathValues[operation.pathNames.indexOf(parameter.name)]].filter((v) => v !== undefined).map(decoded);
      for (const raw of raws) {
        const problem = problemOf(parameter, raw);
        if (problem !== undefined) problems.push(problem);
      }
    }
    next(problems.length === 0 ? undefined : new BadRequestError(problems.join('; '), { messages: problems }));
  };
}
