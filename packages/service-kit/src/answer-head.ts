import { type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders, ServerResponse } from 'node:http';

/**
 * The response class of every server `listen` starts (issue 44: "the answer head written once"). The
 * headers every answer carries (the request id, the security headers, the quota) are kept beside it with
 * `keepHeader` instead of being set one by one, and written with the answer's own in one `writeHead`:
 * Node stores a header given to `setHeader` in a map and writes the map out, and merges a `writeHead`'s
 * headers into it one `setHeader` at a time: ~1-3 µs more per answer for the gateway's dozen (measured alone).
 *
 * Kept headers are a batch of `setHeader` calls applied late, nothing else: whatever reads or changes the
 * headers before the head is written (`setHeader`, `getHeader`, `removeHeader`, Express's `res.set`, an
 * error handler) first applies the batch (`flushHeaders` and `end` write the head through `writeHead`), in order, and then runs as it would have. Only a `writeHead`
 * with its headers as an object, the forwarding's and the cache's, skips the map: the kept headers that
 * object does not name (in any case: it wins, as it would over a `setHeader`) go in one flat list with it.
 */
export class HeadResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  /** Kept headers as name, value, name, value…; undefined when none (or once applied). */
  #kept: string[] | undefined;
  /** Their names in lower case, in the same order. */
  #keptNames: string[] | undefined;

  /** Keeps `name: value` for the head; a name kept before (in any case) takes the new value, as `setHeader` does. */
  keepHeader(name: string, value: string): void {
    if (this.headersSent) {
      // Node's own error for a header set after the head.
      super.setHeader(name, value);
      return;
    }
    const lower = name.toLowerCase();
    const names = (this.#keptNames ??= []);
    const kept = (this.#kept ??= []);
    const at = names.indexOf(lower);
    if (at === -1) {
      names.push(lower);
      kept.push(name, value);
    } else {
      kept[2 * at] = name;
      kept[2 * at + 1] = value;
    }
  }

  /** The value `name` will be sent with so far, kept or set, read without applying the kept headers. */
  peekHeader(name: string): number | string | string[] | undefined {
    const at = this.#keptNames?.indexOf(name.toLowerCase()) ?? -1;
    return at === -1 ? super.getHeader(name) : this.#kept?.[2 * at + 1];
  }

  /** Applies the kept headers with `setHeader`, in the order they were kept (before the headers are touched otherwise). */
  #apply(): void {
    const kept = this.#kept;
    if (kept === undefined) return;
    this.#kept = undefined;
    this.#keptNames = undefined;
    for (let i = 0; i < kept.length; i += 2) super.setHeader(kept[i] as string, kept[i + 1] as string);
  }

  override setHeader(name: string, value: number | string | readonly string[]): this {
    this.#apply();
    return super.setHeader(name, value);
  }

  override appendHeader(name: string, value: string | readonly string[]): this {
    this.#apply();
    return super.appendHeader(name, value);
  }

  override getHeader(name: string): number | string | string[] | undefined {
    this.#apply();
    return super.getHeader(name);
  }

  override getHeaders(): OutgoingHttpHeaders {
    this.#apply();
    return super.getHeaders();
  }

  override getHeaderNames(): string[] {
    this.#apply();
    return super.getHeaderNames();
  }

  /** Node's, which its type declarations leave out. */
  getRawHeaderNames(): string[] {
    this.#apply();
    return (ServerResponse.prototype as unknown as { getRawHeaderNames(this: ServerResponse): string[] }).getRawHeaderNames.call(this);
  }

  override hasHeader(name: string): boolean {
    this.#apply();
    return super.hasHeader(name);
  }

  override removeHeader(name: string): void {
    this.#apply();
    super.removeHeader(name);
  }

  override writeHead(statusCode: number, reason?: string | OutgoingHttpHeaders | OutgoingHttpHeader[], headers?: OutgoingHttpHeaders | OutgoingHttpHeader[]): this {
    const kept = this.#kept;
    const names = this.#keptNames;
    const message = typeof reason === 'string' ? reason : undefined;
    const given = message === undefined ? (reason as OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined) : headers;
    // With a header set already, or given as an array (whose duplicates Node appends), Node merges into its
    // map: the kept ones go there first, as if set where they were kept.
    if (kept === undefined || names === undefined || Array.isArray(given) || super.getHeaderNames().length > 0) {
      this.#apply();
      return message === undefined ? super.writeHead(statusCode, given) : super.writeHead(statusCode, message, given);
    }
    this.#kept = undefined;
    this.#keptNames = undefined;
    const head: OutgoingHttpHeader[] = [];
    if (given !== undefined && given !== null) {
      for (const name of Object.keys(given)) {
        const at = names.indexOf(name.toLowerCase());
        // Overridden by the answer's own header of the same name, as a `setHeader` of it would be.
        if (at !== -1) kept[2 * at] = '';
      }
    }
    for (let i = 0; i < kept.length; i += 2) if (kept[i] !== '') head.push(kept[i] as string, kept[i + 1] as string);
    if (given !== undefined && given !== null) {
      // A value Node refuses (undefined, a line break) throws there as its `setHeader` would have.
      for (const name of Object.keys(given)) head.push(name, (given as OutgoingHttpHeaders)[name] as OutgoingHttpHeader);
    }
    return message === undefined ? super.writeHead(statusCode, head) : super.writeHead(statusCode, message, head);
  }
}

/** `res.getHeader(name)`, which on a `HeadResponse` leaves the kept headers kept. */
export function peekHeader(res: ServerResponse, name: string): number | string | string[] | undefined {
  return res instanceof HeadResponse ? res.peekHeader(name) : res.getHeader(name);
}

/**
 * Keeps `name: value` for `res`'s head (`HeadResponse`); on any other response (a test's server, Express
 * under supertest) sets it at once. Either way the answer carries it unless something later replaces it.
 */
export function keepHeader(res: ServerResponse, name: string, value: string): void {
  if (res instanceof HeadResponse) res.keepHeader(name, value);
  else res.setHeader(name, value);
}
