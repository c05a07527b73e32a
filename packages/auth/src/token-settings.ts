import { env } from '@platform/service-kit';

/** Hosts that may use plain `http` in TOKEN_ISSUER: this machine only (`pnpm start`, tests). */
function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname.endsWith('.localhost') || hostname === '127.0.0.1' || hostname === '[::1]';
}

/**
 * TOKEN_ISSUER: the gateway's public origin, which every token names as `iss` and the discovery documents
 * name as `issuer` (CONTRACT.md part 16). An OAuth client compares it, character for character, with the
 * URL it discovered it at, so it is an origin with nothing after it (no path, no trailing slash), and
 * `https` except on loopback.
 */
export function parseTokenIssuer(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error('must be an absolute URL, the gateway\'s public origin (e.g. https://api.example.com)');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))) {
    throw new Error('must use https (http only for localhost and 127.0.0.1)');
  }
  if (url.origin !== raw) throw new Error(`must be an origin alone, with no path, query or trailing slash (e.g. ${url.origin})`);
  return raw;
}

/** The token settings shared by the three processes, named alike in each (CONTRACT.md parts 4 and 16). */
export const tokenSettingsSpec = {
  TOKEN_ISSUER: env.custom('The gateway\'s public origin: `iss` of every token and `issuer` of the discovery documents; the same in all three processes', parseTokenIssuer, {
    localDefault: 'http://127.0.0.1:8080',
  }),
  JWT_AUDIENCE: env.string('`aud` of access tokens; the same in all three processes', { default: 'urn:identity-risk-platform:api' }),
  TOKEN_BINDING: env.oneOf(['on', 'off'] as const, '`on`: a token is accepted only under the signature of the client key it was issued to (`cnf.kid`); `off`: under any key', {
    default: 'on',
  }),
};
