import { createHash } from 'node:crypto';

/** A JSON document as served: its bytes and a strong ETag over them, the same on every replica that serves the same document. */
export interface JsonRepresentation {
  body: Buffer;
  etag: string;
}

/** Serialises `document` once, with its ETag (SHA-256 of the bytes). */
export function jsonRepresentation(document: unknown): JsonRepresentation {
  const body = Buffer.from(JSON.stringify(document));
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url')}"` };
}

/** Whether an If-None-Match header names `etag` (RFC 9110 section 13.1.2: weak comparison) or is `*`. */
export function noneMatchHits(header: string | undefined, etag: string): boolean {
  return header !== undefined && header.split(',').some((tag) => tag.trim() === '*' || tag.trim().replace(/^W\//, '') === etag);
}

/** What a conditional request is judged by: its method and conditional headers. */
export interface ConditionalRequest {
  method: string | undefined;
  headers: { 'if-none-match'?: string | undefined; 'if-modified-since'?: string | undefined };
}

/**
 * Whether the client's copy of an answer with these validators is current (RFC 9110 section 13.2.2):
 * If-None-Match decides when sent; only without it, and only on GET and HEAD, If-Modified-Since does, by
 * the answer's Last-Modified (a date that does not parse, or no Last-Modified, is no match). A GET or HEAD
 * so answered gets 304; another method's caller decides (a POST lookup's is risk's 412).
 */
export function clientCopyCurrent(req: ConditionalRequest, validators: { etag: string | undefined; lastModified: string | undefined }): boolean {
  const ifNoneMatch = req.headers['if-none-match'];
  if (ifNoneMatch !== undefined) return validators.etag !== undefined && noneMatchHits(ifNoneMatch, validators.etag);
  const ifModifiedSince = req.headers['if-modified-since'];
  if ((req.method !== 'GET' && req.method !== 'HEAD') || ifModifiedSince === undefined || validators.lastModified === undefined) return false;
  const since = Date.parse(ifModifiedSince);
  return !Number.isNaN(since) && Date.parse(validators.lastModified) <= since;
}
