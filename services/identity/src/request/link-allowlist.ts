import { BadRequestError } from '@platform/errors';

/** The origins of the allow-list entries; entries that are not URLs are ignored. */
export function allowedOrigins(entries: readonly string[]): Set<string> {
  const origins = new Set<string>();
  for (const entry of entries) {
    try {
      origins.add(new URL(entry).origin);
    } catch {
      // config documents entries as origins; a typo simply allows nothing
    }
  }
  return origins;
}

/**
 * Throws 400 unless `link` is an http(s) URL whose origin is on the allow-list: links the service sends
 * people to (reset e-mails, redirects after a reset) must never point at a stranger's site.
 */
export function assertAllowedLink(link: string, origins: ReadonlySet<string>, field: string): URL {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    throw new BadRequestError(`body.${field} must be an absolute URL`, { messages: [`body.${field} must be an absolute URL`] });
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !origins.has(url.origin)) {
    const message = `body.${field} must point to an allowed origin`;
    throw new BadRequestError(message, { messages: [message] });
  }
  return url;
}
