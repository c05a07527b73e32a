/** An upstream service and the path prefixes the gateway sends to it (CONTRACT.md part 1). */
export interface UpstreamRoute {
  name: 'identity' | 'risk';
  url: string;
  prefixes: readonly string[];
}

/** The routing table: by path prefix, whatever the Host. `/.well-known/jwks.json` is deliberately absent. */
export function upstreamRoutes(urls: { identity: string; risk: string }): UpstreamRoute[] {
  return [
    { name: 'identity', url: urls.identity, prefixes: ['/v1/auth', '/v1/users', '/v1/accounts'] },
    { name: 'risk', url: urls.risk, prefixes: ['/v1/weather-stations'] },
  ];
}

/** The Express path patterns of a route: the prefix itself and everything below it. */
export function routePatterns(route: UpstreamRoute): string[] {
  return route.prefixes.map((prefix) => `${prefix}{/*rest}`);
}
