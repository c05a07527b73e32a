import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { OPENAPI_PATH } from '../../src/app.ts';

interface PropertySchema {
  type: string;
  minimum?: number;
  maximum?: number;
}

interface ObjectSchema {
  required: string[];
  properties: Record<string, PropertySchema>;
}

const document = parse(readFileSync(OPENAPI_PATH, 'utf8')) as { components: { schemas: Record<string, ObjectSchema> } };

/**
 * Checks a value against a flat object schema of openapi.yaml. The list answers are serialised once at
 * index build and sent as bytes, which the response validator (it hooks res.json) never sees, so the
 * tests hold them to the document instead.
 */
export function assertMatchesSchema(value: unknown, schemaName: 'Station' | 'StationWithDistance'): void {
  const schema = document.components.schemas[schemaName]!;
  assert.equal(typeof value, 'object');
  const record = value as Record<string, unknown>;
  assert.deepEqual(Object.keys(record).sort(), Object.keys(schema.properties).sort(), `${schemaName} fields`);
  for (const name of schema.required) assert.ok(name in record, `${schemaName}.${name} is required`);
  for (const [name, property] of Object.entries(schema.properties)) {
    const field = record[name];
    if (property.type === 'integer') assert.ok(Number.isInteger(field), `${schemaName}.${name} must be an integer`);
    else assert.equal(typeof field, property.type, `${schemaName}.${name} must be a ${property.type}`);
    if (property.minimum !== undefined) assert.ok((field as number) >= property.minimum, `${schemaName}.${name} >= ${property.minimum}`);
    if (property.maximum !== undefined) assert.ok((field as number) <= property.maximum, `${schemaName}.${name} <= ${property.maximum}`);
  }
}
