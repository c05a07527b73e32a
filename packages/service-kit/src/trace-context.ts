import { randomFillSync } from 'node:crypto';
import { type SpanContext, context, isSpanContextValid, trace } from '@opentelemetry/api';

/**
 * The W3C trace context of one request as this process continues it (CONTRACT.md part 12): the trace it
 * belongs to, the id of this process's own span in it (the parent of what it calls), and the flags.
 */
export interface TraceContext {
  /** 32 lower-case hex digits, never all zero. */
  traceId: string;
  /** 16 lower-case hex digits, never all zero: this process's span, the parent of its outgoing calls. */
  spanId: string;
  /** 2 hex digits; `01` means sampled. */
  flags: string;
  /** True when OpenTelemetry's SDK made the span: its instrumentation then propagates the context itself. */
  fromSdk: boolean;
}

/** W3C Trace Context level 1: version-traceid-parentid-flags; a later version may append fields after a dash. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-[^]*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * The trace id, parent id and flags of a `traceparent` header, or undefined when it is absent or not
 * valid by the W3C rules: version `ff` is invalid, version `00` has exactly four fields, neither id may be
 * all zeros, hex digits are lower case. Two header lines (an array) are invalid too.
 */
export function parseTraceparent(header: string | string[] | undefined): { traceId: string; parentId: string; flags: string } | undefined {
  if (typeof header !== 'string' || header.length > 512) return undefined;
  const match = TRACEPARENT.exec(header.trim());
  if (match === null) return undefined;
  const [, version, traceId, parentId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (traceId === ZERO_TRACE || parentId === ZERO_SPAN) return undefined;
  return { traceId, parentId, flags };
}

/** The `traceparent` header naming `ctx.spanId` as the parent of the call it goes on. */
export function formatTraceparent(ctx: Pick<TraceContext, 'traceId' | 'spanId' | 'flags'>): string {
  return `00-${ctx.traceId}-${ctx.spanId}-${ctx.flags}`;
}

// Ids come from a pool of random bytes filled 4 kB at a time: one system call per ~200 requests instead of
// one per id. An all-zero id (invalid by W3C, a chance of 2^-64 or less) is drawn again.
const POOL = Buffer.alloc(4096);
let poolAt = POOL.length;
function randomHex(bytes: number): string {
  if (poolAt + bytes > POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  const hex = POOL.toString('hex', poolAt, (poolAt += bytes));
  return /^0+$/.test(hex) ? randomHex(bytes) : hex;
}

/** The span context of the OpenTelemetry span active right now, when the SDK runs and made one. */
export function activeSpanContext(): SpanContext | undefined {
  const span = trace.getSpan(context.active());
  if (span === undefined) return undefined;
  const spanContext = span.spanContext();
  return isSpanContextValid(spanContext) ? spanContext : undefined;
}

/**
 * Names the OpenTelemetry server span of the request being handled by its route template
 * (`GET /v1/weather-stations/by/id/{stationId}`), as the HTTP instrumentation names it from Express's own
 * routes: for routing Express does not see (the gateway's operation table), whose spans would otherwise be
 * named by the method alone. Without the SDK there is no active span and nothing else happens.
 */
export function nameServerSpan(method: string, route: string): void {
  const span = trace.getActiveSpan();
  if (span === undefined) return;
  span.updateName(`${method} ${route}`);
  span.setAttribute('http.route', route);
}

/**
 * The trace context of a request: the SDK's span when OpenTelemetry runs (`sdkSpan`), else the caller's
 * valid `traceparent` continued with a new span of ours, else a new trace. Unsampled when this process
 * starts the trace without the SDK: nothing of it is recorded.
 */
export function traceContextOf(traceparent: string | string[] | undefined, sdkSpan: SpanContext | undefined): TraceContext {
  if (sdkSpan !== undefined) {
    return { traceId: sdkSpan.traceId, spanId: sdkSpan.spanId, flags: sdkSpan.traceFlags.toString(16).padStart(2, '0'), fromSdk: true };
  }
  const incoming = parseTraceparent(traceparent);
  const spanId = randomHex(8);
  if (incoming === undefined) return { traceId: randomHex(16), spanId, flags: '00', fromSdk: false };
  return { traceId: incoming.traceId, spanId, flags: incoming.flags, fromSdk: false };
}
