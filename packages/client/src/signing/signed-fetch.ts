import { signRequest } from './sign-request.ts';
import type { Signer } from './signer.ts';

/**
 * A `fetch` that signs every request it sends as the gateway requires (CONTRACT.md parts 2 and 3: RFC 9421
 * signature, `Content-Digest` of the body, a fresh idempotency key), for libraries that take a custom
 * fetch: an OAuth client's discovery, introspection and revocation calls (oauth4webapi's `customFetch`,
 * openid-client's), with this SDK's signer. The `Authorization` header, when the caller sets one, is signed
 * too. Nothing is retried: the library sees the gateway's answer as it is.
 */
export function signedFetch(signer: Signer, fetchImpl: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const bytes = request.body === null ? undefined : new Uint8Array(await request.arrayBuffer());
    const body = bytes !== undefined && bytes.length > 0 ? bytes : undefined;
    const url = new URL(request.url);
    const headers = new Headers(request.headers);
    const signed = await signRequest(
      { method: request.method, url, idempotencyKey: crypto.randomUUID(), body, authorization: headers.get('authorization') ?? undefined },
      signer,
    );
    for (const [name, value] of Object.entries(signed)) headers.set(name, value);
    return fetchImpl(url, { method: request.method, headers, body, redirect: request.redirect, signal: request.signal });
  };
}
