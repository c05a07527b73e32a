/** The upstream services the gateway proxies to. */
export type UpstreamName = 'identity' | 'risk';

/** An upstream service and the path prefixes the gateway sends to it (CONTRACT.md part 1). */
export interface UpstreamRoute {
  name: UpstreamName;
  url: string;
  prefixes: readonly string[];
}

/** The routing table: by path prefix, whatever the Host. `/.well-known/jwks.json` is deliberately absent. */
export function upstreamRoutes(urls: Record<UpstreamName, string>): Record<UpstreamName, UpstreamRoute> {
  return {
    identity: { name: 'identity', url: urls.identity, prefixes: ['/v1/auth', '/v1/users', '/v1/accounts', '/v1/audit'] },
    risk: { name: 'risk', url: urls.risk, prefixes: ['/v1/weather-stations'] },
  };
}

/** True when `path` (without its query) is `route`'s: one of its prefixes or below one. */
export function isUnder(route: UpstreamRoute, path: string): boolean {
  return route.prefixes.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}
