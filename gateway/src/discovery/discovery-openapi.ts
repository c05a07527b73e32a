import type { OpenApiOperation, OpenApiPathItem } from '@platform/service-kit';
import { JWKS_PATH, METADATA_PATHS, SIGNED_REQUEST, TOKEN_ALGORITHMS } from './issuer-metadata.ts';

/** The tag of the discovery operations in the merged document. */
export const DISCOVERY_TAG = {
  name: 'Discovery',
  description: 'Issuer metadata and token keys for other gateways, resource servers and OAuth libraries (CONTRACT.md part 16), served by the gateway itself.',
};

const header = (description: string, value?: string) => ({ description, required: true, schema: { type: 'string', ...(value === undefined ? {} : { enum: [value] }) } });

/** What every answer of a discovery operation carries, 304 included. */
const CACHE_HEADERS = {
  'Cache-Control': header('Any cache may keep the document for 5 minutes.', 'public, max-age=300'),
  ETag: header('A strong validator of the document (a hash of its bytes): the same on every gateway that serves the same document.'),
  'Access-Control-Allow-Origin': header('Public metadata: any page may read it.', '*'),
};

const uri = (description: string) => ({ type: 'string', format: 'uri', description });
const values = (description: string, allowed: readonly string[]) => ({ type: 'array', description, items: { type: 'string', enum: allowed } });
const none = (description: string) => ({ type: 'array', description, maxItems: 0, items: { type: 'string' } });

/** The schemas the discovery operations name, for the merged document's components. */
export const DISCOVERY_SCHEMAS = {
  IssuerMetadata: {
    type: 'object',
    description: 'Authorization server metadata (RFC 8414): only what is true of the platform, which has no authorization or token endpoint and issues no id tokens.',
    required: ['issuer', 'jwks_uri', 'introspection_endpoint', 'revocation_endpoint', 'response_types_supported'],
    additionalProperties: false,
    properties: {
      issuer: uri('TOKEN_ISSUER, the gateway\'s public origin: `iss` of every token.'),
      jwks_uri: uri('The keys that verify the tokens: `GET /.well-known/jwks.json` of this gateway.'),
      introspection_endpoint: uri('`POST /v1/auth/introspect` (RFC 7662).'),
      introspection_endpoint_auth_methods_supported: values(`\`${SIGNED_REQUEST}\` (not registered): the request is signed with RFC 9421 under a client key allowed to introspect.`, [SIGNED_REQUEST]),
      revocation_endpoint: uri('`POST /v1/auth/revoke` (RFC 7009).'),
      revocation_endpoint_auth_methods_supported: values(`\`${SIGNED_REQUEST}\` (not registered): the request is signed with RFC 9421 under a client key.`, [SIGNED_REQUEST]),
      response_types_supported: none('None: there is no authorization endpoint.'),
      grant_types_supported: none('None: there is no token endpoint.'),
      access_token_signing_alg_values_supported: values('The algorithms access tokens are signed with: those of the keys of `jwks_uri` now, each of which names its own (not registered). While the keys cannot be fetched, every algorithm a key may have.', TOKEN_ALGORITHMS),
      service_documentation: uri('This API\'s reference page.'),
    },
  },
};

/** One discovery path as documented. */
interface Discovered {
  operationId: string;
  summary: string;
  description: string;
  schemaRef: string;
  errors?: OpenApiOperation['responses'];
}

/** GET and HEAD of one path, served by the gateway itself: unsigned, no idempotency key, never proxied (`x-served-by-gateway`). */
function pathItem({ operationId, summary, description, schemaRef, errors }: Discovered): OpenApiPathItem {
  const operation = (method: 'get' | 'head'): OpenApiOperation => ({
    operationId: `${method}${operationId}`,
    summary: method === 'get' ? summary : `${summary}: headers only`,
    description: `${description}\n\nServed by the gateway itself, to anyone: no signature, idempotency key or token is needed, and none is checked.`,
    tags: [DISCOVERY_TAG.name],
    security: [],
    'x-served-by-gateway': true,
    parameters: [
      {
        name: 'If-None-Match',
        in: 'header',
        required: false,
        description: 'The `ETag` of the document the caller holds; while it is still the current one the answer is 304.',
        schema: { type: 'string' },
      },
    ],
    responses: {
      '200': {
        description: 'The current document.',
        headers: CACHE_HEADERS,
        ...(method === 'get' ? { content: { 'application/json': { schema: { $ref: schemaRef } } } } : {}),
      },
      '304': { description: 'The document named by `If-None-Match` is still the current one. No body.', headers: CACHE_HEADERS },
      ...errors,
    },
  });
  return { get: operation('get'), head: operation('head') };
}

const METADATA_DESCRIPTION =
  'The issuer metadata (RFC 8414), the same document under both well-known names: `issuer` equals every token\'s `iss`, and an OAuth client library finds the key set, introspection and revocation here.';

/** The discovery paths as the merged document shows them (their schemas: DISCOVERY_SCHEMAS, and identity's `Jwks`). */
export function discoveryPaths(): Record<string, OpenApiPathItem> {
  const [openid, oauth] = METADATA_PATHS;
  const metadata = { description: METADATA_DESCRIPTION, schemaRef: '#/components/schemas/IssuerMetadata' };
  return {
    [openid]: pathItem({ operationId: 'OpenIdConfiguration', summary: 'Issuer metadata (OpenID discovery name)', ...metadata }),
    [oauth]: pathItem({ operationId: 'AuthorizationServerMetadata', summary: 'Issuer metadata (RFC 8414 name)', ...metadata }),
    [JWKS_PATH]: pathItem({
      operationId: 'Jwks',
      summary: 'Public keys that verify access tokens',
      description:
        'The JSON Web Key Set (RFC 7517) of the keys this gateway verifies access tokens with, as it holds them now: what it accepts is exactly what is published. A key identity withdraws is gone within seconds (`JWKS_REFRESH_MS`).',
      schemaRef: '#/components/schemas/Jwks',
      errors: {
        '503': {
          description: 'The gateway holds no keys and cannot fetch them from identity right now; retry after `Retry-After` seconds.',
          headers: { 'Retry-After': { $ref: '#/components/headers/ServiceRetryAfter' } },
          content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } },
        },
      },
    }),
  };
}
