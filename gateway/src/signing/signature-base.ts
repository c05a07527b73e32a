import { httpbis } from 'http-message-signatures';
import { SignatureFault } from './signature-fault.ts';
import { PLAIN_NAME, type SignatureEntry } from './signature-headers.ts';

/** The parts of a received request that a signature can cover. */
export interface SignedRequest {
  method: string;
  /** The request target as received (origin form: raw path and query), e.g. `/v1/x?a=1`. */
  target: string;
  /** The Host header; only needed when `@authority` (or another URI component) is covered. */
  authority: string | undefined;
  headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** `@path` and `@query` exactly as the client sent them, which is also what the gateway forwards. */
function rawPathAndQuery(target: string): { path: string; query: string } {
  const at = target.indexOf('?');
  const path = at === -1 ? target : target.slice(0, at);
  // RFC 9421 section 2.2.7: no query (or an empty one) is the single character `?`.
  return { path: path === '' ? '/' : path, query: at === -1 ? '?' : target.slice(at) };
}

/**
 * One field line as RFC 9421 section 2.1 covers it: trimmed, an obsolete line folding replaced by a space.
 * Node's parser leaves no line break in a value it accepts, so the replacement runs only on one that has.
 */
function fieldLine(line: string): string {
  return line.includes('\n') ? line.trim().replace(/\n\s*/g, ' ') : line.trim();
}

/**
 * The base of the common signature built directly: every covered component is `@method`, `@path`,
 * `@query` or a header present in the request, none with component parameters. The lines are what
 * http-message-signatures writes for them (the tests compare the two on many requests); undefined for
 * anything else, which the library builds.
 */
function plainSignatureBase(request: SignedRequest, entry: SignatureEntry, path: string, query: string): string | undefined {
  let base = '';
  for (const [name, params] of entry.input[0]) {
    if (typeof name !== 'string' || params.size > 0 || !PLAIN_NAME.test(name)) return undefined;
    let value: string;
    if (name === '@method') value = request.method.toUpperCase();
    else if (name === '@path') value = path;
    else if (name === '@query') value = query;
    else if (name.startsWith('@')) return undefined;
    else {
      const header = request.headers[name];
      if (header === undefined) return undefined;
      // RFC 9421 section 2.1: each field line trimmed, obsolete line folding replaced, lines joined by ", ".
      value = typeof header === 'string' ? fieldLine(header) : header.map(fieldLine).join(', ');
    }
    base += `"${name}": ${value}\n`;
  }
  return `${base}"@signature-params": ${entry.serializedInput}`;
}

/**
 * The RFC 9421 signature base of `entry` over `request`. `@path` and `@query` are taken from the raw
 * request target instead of a WHATWG URL, which would normalise what the client signed (dot segments,
 * percent-encoding) and so differ from the bytes the gateway forwards. The common signature (see
 * `plainSignatureBase`) is built directly: through the library it cost a third of the gateway's CPU per
 * request, parsing and re-serialising every component name twice. Anything else (other derived
 * components, component parameters such as `;sf` or `;key`, a missing header) goes through
 * http-message-signatures (`librarySignatureBase`).
 */
export function signatureBase(request: SignedRequest, entry: SignatureEntry): string {
  const { path, query } = rawPathAndQuery(request.target);
  return plainSignatureBase(request, entry, path, query) ?? librarySignatureBase(request, entry);
}

/** The signature base as http-message-signatures builds it (derived components, header canonicalisation). */
export function librarySignatureBase(request: SignedRequest, entry: SignatureEntry): string {
  // Only the covered fields: the library scans the headers once per covered field.
  const headers: Record<string, string | string[]> = {};
  for (const [name] of entry.input[0]) {
    const value = typeof name === 'string' && !name.startsWith('@') ? request.headers[name] : undefined;
    if (value !== undefined) headers[name as string] = value;
  }
  const { path, query } = rawPathAndQuery(request.target);
  const message = { method: request.method, url: `http://${request.authority ?? 'host.invalid'}${request.target}`, headers };
  try {
    const base = httpbis.createSignatureBase(
      {
        fields: entry.fields,
        componentParser: (name, params) => (params.size > 0 ? null : name === '@path' ? [path] : name === '@query' ? [query] : null),
      },
      message,
    );
    base.push(['"@signature-params"', [entry.serializedInput]]);
    return httpbis.formatSignatureBase(base);
  } catch (err) {
    // The library throws when a covered header is absent or a component cannot be derived.
    throw new SignatureFault(`cannot build the signature base: ${err instanceof Error ? err.message : String(err)}`);
  }
}
