// Tracing's cost in a trace nobody records (CONTRACT.md part 12, issue 27). Sampling 1 in 10 leaves nine
// requests in ten in an unsampled trace, yet the SDK's tracer builds every span of them in full before
// its sampler says no: a span id, the sampler's call, the attributes cleaned, its own metrics. Here a
// span started under a local span that records nothing is that span's context again, made by nothing.
import { type Context, type Span, type SpanOptions, type Tracer, type TracerProvider, context, trace } from '@opentelemetry/api';

/**
 * The parent's span when a span started in `ctx` cannot be recorded: its parent is a span of this process
 * (not a remote caller's, whose decision the sampler still makes) that records nothing. Every sampler
 * OTEL_TRACES_SAMPLER can name decides a child of such a parent alike: the parent-based ones by the
 * parent, `traceidratio` by the trace id both share, `always_off` always; `always_on` records every parent.
 */
function unrecordedParent(ctx: Context): Span | undefined {
  const parent = trace.getSpan(ctx);
  if (parent === undefined || parent.isRecording() || parent.spanContext().isRemote === true) return undefined;
  return parent;
}

/**
 * `tracer`, but a span started under a local unrecorded span is a non-recording span with that parent's
 * context: what it propagates (the trace id, unsampled) is what the SDK's child would have, and an
 * upstream that continues it records nothing either.
 */
function skippingUnrecorded(tracer: Tracer): Tracer {
  const startSpan = (name: string, options?: SpanOptions, ctx: Context = context.active()): Span => {
    const parent = unrecordedParent(ctx);
    return parent === undefined || options?.root === true ? tracer.startSpan(name, options, ctx) : trace.wrapSpanContext(parent.spanContext());
  };
  return {
    startSpan,
    startActiveSpan<F extends (span: Span) => unknown>(name: string, ...rest: [F] | [SpanOptions, F] | [SpanOptions, Context, F]): ReturnType<F> {
      const fn = rest[rest.length - 1] as F;
      const options = rest.length > 1 ? (rest[0] as SpanOptions) : undefined;
      const ctx = rest.length > 2 ? (rest[1] as Context) : context.active();
      const span = startSpan(name, options, ctx);
      return context.with(trace.setSpan(ctx, span), () => fn(span) as ReturnType<F>);
    },
  };
}

/** `provider`, whose tracers make no span under a local span that records nothing (`skippingUnrecorded`). */
export function skipUnrecordedChildren(provider: TracerProvider): TracerProvider {
  return { getTracer: (...args: Parameters<TracerProvider['getTracer']>) => skippingUnrecorded(provider.getTracer(...args)) };
}
