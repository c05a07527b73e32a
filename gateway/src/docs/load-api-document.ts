import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import type { SigningFacts } from './gateway-openapi.ts';
import { type OpenApiDocument, mergeApiDocuments } from './openapi-merge.ts';

/** Where the services' documents are. */
export interface ApiDocumentSources {
  identityPath: string;
  riskPath: string;
}

async function readYaml(path: string): Promise<OpenApiDocument> {
  const parsed: unknown = parse(await readFile(path, 'utf8'));
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`${path} is not an OpenAPI document`);
  return parsed as OpenApiDocument;
}

/** Reads both services' `openapi.yaml` (once, at start) and merges them into the public document. */
export async function loadApiDocument(sources: ApiDocumentSources, facts: SigningFacts): Promise<OpenApiDocument> {
  const [identity, risk] = await Promise.all([readYaml(sources.identityPath), readYaml(sources.riskPath)]);
  return mergeApiDocuments(identity, risk, facts);
}
