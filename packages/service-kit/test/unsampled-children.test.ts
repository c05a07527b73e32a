import assert from 'node:assert/strict';
import { ROOT_CONTEXT, type Span, SpanKind, type TracerProvider as ApiTracerProvider, TraceFlags, context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AlwaysOnSampler, InMemorySpanExporter, ParentBasedSampler, type Sampler, SimpleSpanProcessor, TraceIdRatioBasedSampler, TracerProvider } from '@opentelemetry/sdk-trace';
import { skipUnrecordedChildren } from '../src/unsampled-children.ts';

// The SDK's own tracer behind the wrapper, with the samplers OTEL_TRACES_SAMPLER names; every span it
// records lands in `exported`.
describe('spans under an unrecorded span (service-kit unsampled-children.ts)', () => {
  const manager = new AsyncLocalStorageContextManager();
  const propagator = new W3CTraceContextPropagator();
  let exported: InMemorySpanExporter;
  let provider: TracerProvider;

  before(() => {
    context.setGlobalContextManager(manager.enable());
    propagation.setGlobalPropagator(propagator);
  });
  after(() => {
    context.disable();
    propagation.disable();
  });

  const tracerWith = (sampler: Sampler) => {
    exported = new InMemorySpanExporter();
    provider = new TracerProvider({ sampler, spanProcessors: [new SimpleSpanProcessor({ exporter: exported })] });
    return skipUnrecordedChildren(provider as unknown as ApiTracerProvider).getTracer('test');
  };
  afterEach(() => provider.shutdown());

  // A trace id the ratio sampler keeps at 0.5 and one it drops: it keeps an id whose four 32-bit words,
  // XORed, fall below half their range.
  const KEPT = '4bf92f354bf92f350000000000000001';
  const DROPPED = '4bf92f354bf92f35ffffffff00000000';
  const remote = (traceId: string, sampled: boolean) =>
    propagation.extract(ROOT_CONTEXT, { traceparent: `00-${traceId}-00f067aa0ba902b7-0${sampled ? 1 : 0}` });
  const headersUnder = (span: Span) => {
    const headers: Record<string, string> = {};
    propagation.inject(trace.setSpan(context.active(), span), headers);
    return headers;
  };

  it('makes no span under an unsampled server span, and hands the same trace on unsampled', () => {
    const tracer = tracerWith(new TraceIdRatioBasedSampler(0.5));
    const server = tracer.startSpan('GET', { kind: SpanKind.SERVER }, remote(DROPPED, true));
    assert.equal(server.isRecording(), false, 'the sampler decides a remote parent\'s child');
    const child = context.with(trace.setSpan(ROOT_CONTEXT, server), () => tracer.startSpan('evalsha', { kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'redis' } }));
    assert.equal(child.isRecording(), false);
    // The parent's own context: no span id of its own was made for it.
    assert.deepEqual(child.spanContext(), server.spanContext());
    assert.equal(headersUnder(child).traceparent, `00-${DROPPED}-${server.spanContext().spanId}-00`);
    child.end();
    server.end();
    assert.deepEqual(exported.getFinishedSpans(), []);
  });

  it('leaves the sampler to decide a span whose parent is a remote caller\'s, and records a sampled trace\'s children as before', () => {
    const tracer = tracerWith(new TraceIdRatioBasedSampler(0.5));
    const server = tracer.startSpan('GET', { kind: SpanKind.SERVER }, remote(KEPT, false));
    assert.equal(server.isRecording(), true, 'a remote unsampled parent does not decide for traceidratio');
    tracer.startActiveSpan('evalsha', { kind: SpanKind.CLIENT }, trace.setSpan(ROOT_CONTEXT, server), (child) => {
      assert.equal(child.isRecording(), true);
      assert.notEqual(child.spanContext().spanId, server.spanContext().spanId);
      assert.equal(trace.getActiveSpan(), child, 'startActiveSpan makes its span the active one');
      child.end();
    });
    server.end();
    const spans = exported.getFinishedSpans();
    assert.deepEqual(spans.map((s) => s.name), ['evalsha', 'GET']);
    assert.equal(spans[0]?.parentSpanContext?.spanId, server.spanContext().spanId);
    assert.equal(spans[0]?.spanContext().traceFlags, TraceFlags.SAMPLED);
  });

  it('follows the parent-based samplers alike: an unsampled caller\'s trace makes no span at all', () => {
    const tracer = tracerWith(new ParentBasedSampler({ root: new AlwaysOnSampler() }));
    const server = tracer.startSpan('GET', { kind: SpanKind.SERVER }, remote(KEPT, false));
    assert.equal(server.isRecording(), false);
    const child = tracer.startActiveSpan('query', { kind: SpanKind.CLIENT }, trace.setSpan(ROOT_CONTEXT, server), (span) => {
      assert.equal(trace.getActiveSpan()?.spanContext().spanId, server.spanContext().spanId);
      return span;
    });
    assert.equal(child.isRecording(), false);
    // A new root is the sampler's to decide, whatever is active.
    const root = context.with(trace.setSpan(ROOT_CONTEXT, server), () => tracer.startSpan('job', { root: true }));
    assert.equal(root.isRecording(), true);
    assert.notEqual(root.spanContext().traceId, KEPT);
    root.end();
    assert.deepEqual(exported.getFinishedSpans().map((s) => s.name), ['job']);
  });
});
