import { STATUS_CODES } from 'node:http';

/** The error body of SPEC.md part 2: every error answer of every process has exactly this shape. */
export interface ErrorBody {
  /** When the error happened, ISO 8601. */
  timestamp: string;
  /** Equals the HTTP status of the answer. */
  status: number;
  /** The reason phrase of `status`. */
  error: string;
  /** A description a person can act on. */
  message: string;
  /** One entry per problem; always present on station operations. */
  messages?: string[];
  /** The request URI as received. */
  path: string;
}

/** The reason phrase for an HTTP status ("Not Found" for 404); "Error" for a status Node does not know. */
export function reasonPhrase(status: number): string {
  return STATUS_CODES[status] ?? 'Error';
}

/** Builds an error body; `timestamp` defaults to now. */
export function errorBody(
  status: number,
  message: string,
  path: string,
  messages?: readonly string[],
  now: Date = new Date(),
): ErrorBody {
  const body: ErrorBody = { timestamp: now.toISOString(), status, error: reasonPhrase(status), message, path };
  if (messages !== undefined) body.messages = [...messages];
  return body;
}

/** True when `value` has the exact field types of an error body (extra fields are tolerated). */
export function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.timestamp === 'string' &&
    Number.isInteger(v.status) &&
    typeof v.error === 'string' &&
    typeof v.message === 'string' &&
    typeof v.path === 'string' &&
    (v.messages === undefined || (Array.isArray(v.messages) && v.messages.every((m) => typeof m === 'string')))
  );
}
