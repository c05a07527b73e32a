/** The environments of CONTRACT.md part 1. */
export type Environment = 'local' | 'test' | 'prod';

/** The two public base URLs of SPEC.md: `{base_url}` (auth, users, accounts) and `{risk_base_url}` (stations). */
export interface BaseUrls {
  baseUrl: string;
  riskBaseUrl: string;
}

/**
 * Default base URLs per environment. `local` is the gateway of `pnpm start`; the `test` and `prod`
 * hosts are placeholders of this repository, so real deployments pass `baseUrl` and `riskBaseUrl`.
 */
export const ENVIRONMENTS: Readonly<Record<Environment, BaseUrls>> = {
  local: { baseUrl: 'http://127.0.0.1:8080', riskBaseUrl: 'http://127.0.0.1:8080' },
  test: { baseUrl: 'https://api.test.example.com', riskBaseUrl: 'https://risk.test.example.com' },
  prod: { baseUrl: 'https://api.example.com', riskBaseUrl: 'https://risk.example.com' },
};

/** True for the names of `ENVIRONMENTS`. */
export function isEnvironment(value: string): value is Environment {
  return Object.hasOwn(ENVIRONMENTS, value);
}

/**
 * The base URLs a client uses: the environment's preset, overridden by what is given. A `baseUrl`
 * given alone also serves the stations, since one gateway answers both (CONTRACT.md part 1).
 */
export function resolveBaseUrls(env: Environment, baseUrl?: string, riskBaseUrl?: string): BaseUrls {
  const preset = ENVIRONMENTS[env];
  const urls = { baseUrl: baseUrl ?? preset.baseUrl, riskBaseUrl: riskBaseUrl ?? baseUrl ?? preset.riskBaseUrl };
  for (const url of Object.values(urls)) {
    let protocol = '';
    try {
      protocol = new URL(url).protocol;
    } catch {
      // reported below with the URL
    }
    if (protocol !== 'http:' && protocol !== 'https:') throw new TypeError(`not an http(s) base URL: ${url}`);
  }
  return urls;
}
