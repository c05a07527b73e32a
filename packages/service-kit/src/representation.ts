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
