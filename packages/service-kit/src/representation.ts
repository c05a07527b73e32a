import { createHash } from 'node:crypto';
import { daysInMonth } from './rfc3339-date-time.ts';

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

const MONTH = '(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MONTH} ( \\d|\\d{2}) ${TIME} (\\d{4})$`);
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * The instant (epoch ms) of these fields when they name one that exists (no Feb 30, no hour 24: the calendar
 * of the RFC 3339 reader, `daysInMonth`), else undefined.
 */
function instantOf(year: number, month: string, day: number, hour: number, minute: number, second: number): number | undefined {
  const monthIndex = MONTHS.indexOf(month);
  if (day < 1 || day > daysInMonth(year, monthIndex + 1) || hour > 23 || minute > 59 || second > 60) return undefined;
  // setUTCFullYear, not Date.UTC (which reads the years 0-99 as 1900-1999). Second 60 is a leap second
  // (RFC 9110's grammar allows it): one past 59.
  const at = new Date(0);
  at.setUTCFullYear(year, monthIndex, day);
  at.setUTCHours(hour, minute, Math.min(second, 59));
  return at.getTime() + (second === 60 ? 1000 : 0);
}

/**
 * An HTTP-date (RFC 9110 section 5.6.7) as epoch ms: the IMF-fixdate, or either obsolete form recipients
 * must accept (RFC 850's two-digit year taken as the latest such year not more than 50 years ahead, and
 * asctime's); undefined for anything else, which `Date.parse` would often read as some date all the same
 * (`2090`, `2090-01-01`, `Fri, 31 Feb 2090 …`).
 */
export function parseHttpDate(text: string, now: number = Date.now()): number | undefined {
  let match = IMF_FIXDATE.exec(text);
  if (match !== null) {
    const [, day, month, year, hour, minute, second] = match as unknown as string[];
    return instantOf(Number(year), month as string, Number(day), Number(hour), Number(minute), Number(second));
  }
  match = RFC850_DATE.exec(text);
  if (match !== null) {
    const [, day, month, yy, hour, minute, second] = match as unknown as string[];
    const thisYear = new Date(now).getUTCFullYear();
    let year = thisYear - (thisYear % 100) + Number(yy);
    if (year > thisYear + 50) year -= 100;
    return instantOf(year, month as string, Number(day), Number(hour), Number(minute), Number(second));
  }
  match = ASCTIME_DATE.exec(text);
  if (match !== null) {
    const [, month, day, hour, minute, second, year] = match as unknown as string[];
    return instantOf(Number(year), month as string, Number(day), Number(hour), Number(minute), Number(second));
  }
  return undefined;
}

/** What a conditional request is judged by: its method and conditional headers. */
export interface ConditionalRequest {
  method: string | undefined;
  headers: { 'if-none-match'?: string | undefined; 'if-modified-since'?: string | undefined };
}

/**
 * Whether the client's copy of an answer with these validators is current (RFC 9110 section 13.2.2):
 * If-None-Match decides when sent; only without it, and only on GET and HEAD, If-Modified-Since does, by
 * the answer's Last-Modified (a value that is no HTTP-date is ignored, RFC 9110 section 13.1.3: no match; nor
 * is there one without Last-Modified). A GET or HEAD
 * so answered gets 304; another method's caller decides (a POST lookup's is risk's 412).
 */
export function clientCopyCurrent(req: ConditionalRequest, validators: { etag: string | undefined; lastModified: string | undefined }): boolean {
  const ifNoneMatch = req.headers['if-none-match'];
  if (ifNoneMatch !== undefined) return validators.etag !== undefined && noneMatchHits(ifNoneMatch, validators.etag);
  const ifModifiedSince = req.headers['if-modified-since'];
  if ((req.method !== 'GET' && req.method !== 'HEAD') || ifModifiedSince === undefined || validators.lastModified === undefined) return false;
  const since = parseHttpDate(ifModifiedSince);
  const modified = parseHttpDate(validators.lastModified);
  return since !== undefined && modified !== undefined && modified <= since;
}
