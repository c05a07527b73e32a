import type { TokenAlgorithm } from '@platform/auth';

/** Where the gateway publishes the keys that verify tokens (CONTRACT.md part 16). */
export const JWKS_PATH = '/.well-known/jwks.json';

/** The two well-known names of the one metadata document: OpenID discovery's, which many libraries try first, and RFC 8414's. */
export const METADATA_PATHS = ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server'] as const;

/**
 * How a caller authenticates at introspection and revocation: it signs the request with RFC 9421 under its
 * client key, as every request to `/v1/**` (CONTRACT.md part 2). No registered method says that, and
 * RFC 8414 lets a server name its own.
 */
export const SIGNED_REQUEST = 'http_message_signature';

/** Every algorithm a token key may have (`algorithmOf`): the record makes the compiler ask for a new one here. */
export const TOKEN_ALGORITHMS = Object.keys({ ES256: true, RS256: true } satisfies Record<TokenAlgorithm, true>) as TokenAlgorithm[];

/**
 * The authorization server metadata (RFC 8414) of the platform, for `issuer` (TOKEN_ISSUER, an origin),
 * whose token keys now have `algorithms`: only what is true of it. No authorization or token endpoint
 * (login is not OAuth's), no id tokens, so none of OpenID's provider fields; a client library needs
 * `issuer` to match and the endpoints.
 */
export function issuerMetadata(issuer: string, algorithms: readonly TokenAlgorithm[]): Record<string, unknown> {
  return {
    issuer,
    jwks_uri: `${issuer}${JWKS_PATH}`,
    introspection_endpoint: `${issuer}/v1/auth/introspect`,
    introspection_endpoint_auth_methods_supported: [SIGNED_REQUEST],
    revocation_endpoint: `${issuer}/v1/auth/revoke`,
    revocation_endpoint_auth_methods_supported: [SIGNED_REQUEST],
    // Required by RFC 8414; with no authorization endpoint there is none to list.
    response_types_supported: [],
    // Left out, RFC 8414 would read it as authorization_code and implicit: neither is served.
    grant_types_supported: [],
    // Not registered (Janssen and InterSystems IRIS publish it): what access tokens are signed with, so a
    // verifier can pin the algorithms: those of the keys of jwks_uri now, each of which names its own.
    access_token_signing_alg_values_supported: TOKEN_ALGORITHMS.filter((algorithm) => algorithms.includes(algorithm)),
    service_documentation: `${issuer}/docs`,
  };
}
