import { type ErrorBody, errorBody } from './error-body.ts';

const MAX_MESSAGE_LENGTH = 1000;
const MAX_MESSAGES = 50;

function text(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  return trimmed.length > MAX_MESSAGE_LENGTH ? `${trimmed.slice(0, MAX_MESSAGE_LENGTH)}…` : trimmed;
}

function decode(raw: unknown): unknown {
  if (Buffer.isBuffer(raw)) raw = raw.toString('utf8');
  if (typeof raw !== 'string') return raw;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return undefined;
  }
}

function messagesOf(value: unknown): string[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const out: string[] = [];
  for (const entry of value) {
    const m = text(entry) ?? text((entry as { message?: unknown } | null)?.message);
    if (m !== undefined) out.push(m);
    if (out.length === MAX_MESSAGES) break;
  }
  return out.length > 0 ? out : undefined;
}

/**
 * Reads whatever an upstream sent with an error status and returns a well-formed error body.
 * Tolerant by design: our own shape, RFC 9457 problem details, `{ error: "…" }`, `{ errors: [...] }`,
 * plain text or HTML all yield a body. The HTTP `status` always wins over the one in the body, `error`
 * is recomputed from it, and the `path` is the one the client asked for, so an upstream can never make
 * the gateway answer an inconsistent body.
 */
export function parseUpstreamError(status: number, raw: unknown, path: string, fallbackMessage?: string): ErrorBody {
  const decoded = decode(raw);
  const fields = typeof decoded === 'object' && decoded !== null && !Array.isArray(decoded)
    ? (decoded as Record<string, unknown>)
    : {};
  const messages = messagesOf(fields.messages) ?? messagesOf(fields.errors);
  const message =
    text(fields.message) ??
    text(fields.detail) ??
    text(fields.title) ??
    text(fields.error) ??
    messages?.[0] ??
    fallbackMessage ??
    errorBody(status, '', path).error;
  const timestamp = text(fields.timestamp);
  const when = timestamp !== undefined && !Number.isNaN(Date.parse(timestamp)) ? new Date(timestamp) : new Date();
  return errorBody(status, message, path, messages, when);
}
