// The HTTP spans of a process that makes them itself instead of through OpenTelemetry's HTTP
// instrumentation (CONTRACT.md part 12): the gateway, where the instrumentation cost most of what tracing
// costs per request, sampled or not (the bench diary, `git show f0a4e11:bench/README.md`, issue 27: building the URL and the attributes before
// the sampler decides, and re-binding every listener of the request, the answer and the socket to the
// request's context). Here the sampler decides first; an unsampled request gets a non-recording span, no
// attribute and no listener wrapping, yet carries its trace on upstream. Only @opentelemetry/api is
// loaded: it is a no-op until startTracing() hands this module its tracer.
import type { RequestListener, ServerResponse } from 'node:http';
import { type Span, SpanKind, SpanStatusCode, type Tracer, ROOT_CONTEXT, context, propagation, trace } from '@opentelemetry/api';
import { loggedTarget } from './http-logger.ts';

let tracer: Tracer | undefined;

/** Called by startTracing() when the process makes its HTTP spans here: from then on they are made. */
export function useOwnHttpSpans(by: Tracer): void {
  tracer = by;
}

/** Probes and scrapes would be most of the spans and say nothing about a request: no span for these paths, whoever makes them. */
export const UNTRACED_PATHS = /^\/(health\/|metrics)/;

/**
 * `app` with a server span around each request: continued from the request's `traceparent` (as the
 * sampler allows), active while `app` handles it, so that what it calls (Redis, the upstream) is a child.
 * Named by the method until the router names it by its route (nameServerSpan). `app` itself when this
 * process does not make its own HTTP spans.
 */
export function withServerSpans(app: RequestListener): RequestListener {
  return (req, res) => {
    if (tracer === undefined || UNTRACED_PATHS.test(req.url ?? '')) {
      app(req, res);
      return;
    }
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const method = req.method ?? 'GET';
    const span = tracer.startSpan(method, { kind: SpanKind.SERVER }, parent);
    if (span.isRecording()) {
      span.setAttributes({
        'http.request.method': method,
        'url.path': (req.url ?? '/').split('?', 1)[0] ?? '/',
        'url.scheme': 'http',
        'server.address': String(req.headers.host ?? ''),
        'client.address': req.socket.remoteAddress ?? '',
      });
      if (req.headers['user-agent'] !== undefined) span.setAttribute('user_agent.original', req.headers['user-agent']);
      endWithAnswer(span, res);
    }
    context.with(trace.setSpan(parent, span), app, undefined, req, res);
  };
}

function endWithAnswer(span: Span, res: ServerResponse): void {
  res.once('close', () => {
    const status = res.statusCode;
    span.setAttribute('http.response.status_code', status);
    // A server span is in error when the server failed (5xx), or the answer never went out whole.
    if (status >= 500 || !res.writableFinished) span.setStatus({ code: SpanStatusCode.ERROR, message: res.writableFinished ? undefined : 'the answer was cut off' });
    span.end();
  });
}

/** One outgoing call's span, ended once with how the call ended. */
export interface ClientSpan {
  end(outcome: number | Error): void;
}

/**
 * A client span for a call about to go to `url` (a child of the active span) whose `traceparent` is
 * written into `headers`, so that the callee continues it; undefined when this process does not make its
 * own HTTP spans (the caller then propagates the context as it does without tracing).
 */
export function startClientSpan(method: string, url: URL, target: string, headers: Record<string, string>): ClientSpan | undefined {
  if (tracer === undefined) return undefined;
  const span = tracer.startSpan(method, { kind: SpanKind.CLIENT });
  propagation.inject(trace.setSpan(context.active(), span), headers);
  if (!span.isRecording()) return { end: () => span.end() };
  span.setAttributes({
    'http.request.method': method,
    // As the log lines show it: a secret a client put in the query stays out of the traces too.
    'url.full': `${url.origin}${loggedTarget(target)}`,
    'server.address': url.hostname,
    'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
  });
  return {
    end(outcome) {
      if (typeof outcome === 'number') {
        span.setAttribute('http.response.status_code', outcome);
        if (outcome >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
      } else {
        span.recordException(outcome);
        span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.message });
      }
      span.end();
    },
  };
}
