// The RFC 9421 signature base for the components CONTRACT.md part 2 requires. Pure and synchronous, so a
// client in another language can be checked against it line by line (README "Call the API").

/** The algorithms the gateway accepts, named as in the `alg` signature parameter. */
export type SigningAlgorithm = 'hmac-sha256' | 'ed25519';

/** What one signature covers and states. */
export interface SignatureBaseInput {
  /** HTTP method; uppercased for `@method`. */
  method: string;
  /** The path exactly as sent, percent-encoded (`/v1/weather-stations/get-districts-of/%C4%B0stanbul`). */
  path: string;
  /** The query as sent, with or without its leading `?`; empty when the URL has none. */
  query: string;
  idempotencyKey: string;
  /** The Content-Digest header value; present exactly when a body is sent. */
  contentDigest?: string;
  /** The Authorization header value; present exactly when it is sent. */
  authorization?: string;
  /** Unix seconds. */
  created: number;
  nonce: string;
  keyId: string;
  alg: SigningAlgorithm;
}

/** The signature base and the `Signature-Input` member value (the part after `sig1=`). */
export interface SignatureBase {
  base: string;
  params: string;
  components: string[];
}

/** A nonce as the gateway accepts it (CONTRACT.md part 2). */
export const NONCE_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;

/** RFC 8941 sf-string: printable ASCII with `\` and `"` escaped. */
function sfString(value: string): string {
  if (!/^[\x20-\x7e]*$/.test(value)) throw new TypeError(`not a structured-field string (printable ASCII only): ${JSON.stringify(value)}`);
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** RFC 9421 section 2.2.7: `@query` is the query with its `?`, or `?` alone when the URL has none. */
export function queryComponent(query: string): string {
  if (query === '' || query === '?') return '?';
  return query.startsWith('?') ? query : `?${query}`;
}

/**
 * Builds the signature base of RFC 9421 section 2.5: one `"<name>": <value>` line per covered component,
 * in order, then the `"@signature-params"` line, joined by `\n` with no trailing newline. Covers
 * `content-digest` and `authorization` exactly when they are sent, as the gateway requires.
 */
export function signatureBase(input: SignatureBaseInput): SignatureBase {
  if (!NONCE_PATTERN.test(input.nonce)) throw new TypeError('nonce must be 16-128 characters of [A-Za-z0-9_-]');
  if (!Number.isSafeInteger(input.created)) throw new TypeError('created must be an integer number of seconds');
  const lines: [string, string][] = [
    ['@method', input.method.toUpperCase()],
    ['@path', input.path === '' ? '/' : input.path],
    ['@query', queryComponent(input.query)],
    ['x-idempotency-key', input.idempotencyKey.trim()],
  ];
  if (input.contentDigest !== undefined) lines.push(['content-digest', input.contentDigest.trim()]);
  if (input.authorization !== undefined) lines.push(['authorization', input.authorization.trim()]);
  const components = lines.map(([name]) => name);
  const params =
    `(${components.map((name) => `"${name}"`).join(' ')})` +
    `;created=${input.created};nonce=${sfString(input.nonce)};keyid=${sfString(input.keyId)};alg=${sfString(input.alg)}`;
  const base = [...lines.map(([name, value]) => `"${name}": ${value}`), `"@signature-params": ${params}`].join('\n');
  return { base, params, components };
}
