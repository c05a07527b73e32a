import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import type { OpenApiDocument } from '@platform/service-kit';
import type { GatewayConfig } from '../config.ts';
import type { SigningFacts } from './gateway-openapi.ts';
import { idempotencyKeyLifetimeS } from '../signing/signature-policy.ts';
import { mergeApiDocuments } from './openapi-merge.ts';

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

/** The merged document for a gateway with `config`: its documents' paths and its own signing facts. */
export function loadApiDocumentFor(
  config: Pick<
    GatewayConfig,
    'IDENTITY_OPENAPI_PATH' | 'RISK_OPENAPI_PATH' | 'SIGNATURE_MAX_SKEW_S' | 'IDEMPOTENCY_TTL_SAFE_S' | 'IDEMPOTENCY_TTL_UNSAFE_S' | 'GATEWAY_BODY_LIMIT_BYTES'
  >,
): Promise<OpenApiDocument> {
  return loadApiDocument(
    { identityPath: config.IDENTITY_OPENAPI_PATH, riskPath: config.RISK_OPENAPI_PATH },
    {
      maxSkewS: config.SIGNATURE_MAX_SKEW_S,
      safeTtlS: idempotencyKeyLifetimeS(config.IDEMPOTENCY_TTL_SAFE_S, config.SIGNATURE_MAX_SKEW_S),
      unsafeTtlS: idempotencyKeyLifetimeS(config.IDEMPOTENCY_TTL_UNSAFE_S, config.SIGNATURE_MAX_SKEW_S),
      bodyLimitBytes: config.GATEWAY_BODY_LIMIT_BYTES,
    },
  );
}
