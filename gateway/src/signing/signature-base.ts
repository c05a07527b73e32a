import { httpbis } from 'http-message-signatures';
import { serializeItem, serializeList } from 'structured-headers';
import { SignatureFault } from './signature-fault.ts';
import type { SignatureEntry } from './signature-headers.ts';

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
 * The RFC 9421 signature base of `entry` over `request`, built by http-message-signatures (derived
 * components, header canonicalisation, the `@signature-params` line). Only `@path` and `@query` are
 * taken from the raw request target instead of a WHATWG URL, which would normalise what the client
 * signed (dot segments, percent-encoding) and so differ from the bytes the gateway forwards.
 */
export function signatureBase(request: SignedRequest, entry: SignatureEntry): string {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(request.headers)) if (value !== undefined) headers[name] = value;
  const { path, query } = rawPathAndQuery(request.target);
  const message = { method: request.method, url: `http://${request.authority ?? 'host.invalid'}${request.target}`, headers };
  try {
    const base = httpbis.createSignatureBase(
      {
        fields: entry.input[0].map((item) => serializeItem(item)),
        componentParser: (name, params) => (params.size > 0 ? null : name === '@path' ? [path] : name === '@query' ? [query] : null),
      },
      message,
    );
    base.push(['"@signature-params"', [serializeList([entry.input])]]);
    return httpbis.formatSignatureBase(base);
  } catch (err) {
    // The library throws when a covered header is absent or a component cannot be derived.
    throw new SignatureFault(`cannot build the signature base: ${err instanceof Error ? err.message : String(err)}`);
  }
}
