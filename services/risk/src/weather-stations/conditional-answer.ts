// CONTRACT.md part 17: every successful station answer is cacheable. Its strong ETag comes from the index
// generation and the request (the same on every replica serving that generation), its Last-Modified is
// when that generation's data changed, and a conditional request is answered per RFC 9110 section 13.2.2.
import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import { HttpError } from '@platform/errors';
import { clientCopyCurrent } from '@platform/service-kit';
import type { StationIndex } from './station-index.ts';

/** Any client may keep a station answer for a minute; shared caches may not (the answer needs a token). */
export const STATION_CACHE_CONTROL = 'private, max-age=60';

/** A 412: the POST lookup's If-None-Match matched (RFC 9110 section 13.1.2 answers 304 to GET and HEAD only). */
class PreconditionFailedError extends HttpError {
  constructor() {
    super(412, 'The answer named in If-None-Match is the current one');
  }
}

/** The strong ETag of the answer to `request` (what the answer depends on) from `index`. */
export function stationETag(index: StationIndex, request: string): string {
  return `"${index.version}-${createHash('sha256').update(request).digest('base64url').slice(0, 27)}"`;
}

/** The JSON answer's type, as Express's `res.type('application/json')` wrote it. */
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Sends `body` (JSON) as the answer to `request` from `index`, with its validators, or 304 with none when
 * the client's copy is current; throws the 412 of a POST whose If-None-Match matched. The head is written
 * in one `writeHead` with the headers the request envelope kept (service-kit's answer-head.ts), and Node
 * leaves a HEAD request's body out.
 */
export function sendStationAnswer(req: Request, res: Response, index: StationIndex, request: string, body: Buffer | string): void {
  const etag = stationETag(index, request);
  const safe = req.method === 'GET' || req.method === 'HEAD';
  // If-None-Match wins: If-Modified-Since counts only without it, and only on GET and HEAD.
  const current = clientCopyCurrent(req, { etag, lastModified: index.lastModified });
  if (current && !safe) throw new PreconditionFailedError();
  if (current) {
    res.writeHead(304, { etag, 'last-modified': index.lastModified, 'cache-control': STATION_CACHE_CONTROL }).end();
    return;
  }
  res
    .writeHead(200, {
      'content-type': JSON_TYPE,
      'content-length': typeof body === 'string' ? Buffer.byteLength(body) : body.length,
      etag,
      'last-modified': index.lastModified,
      'cache-control': STATION_CACHE_CONTROL,
    })
    .end(body);
}
