// OpenTelemetry for one deployable's process (CONTRACT.md part 12). Loaded by a composition root before
// anything it instruments (express, pg, ioredis, node:http): this module imports nothing heavy itself, and
// the SDK is required synchronously, only when OTEL_EXPORTER_OTLP_ENDPOINT is set, so that the modules
// the root imports after this one are loaded with the instrumentations already hooked. Without the
// endpoint the SDK is never loaded and nothing is patched (only @opentelemetry/api's no-op interfaces,
// which trace-context.ts asks): no exporter, no span, no cost per request.
import { createRequire } from 'node:module';
import { type ConfigOf, env, loadConfig } from './config.ts';
import { loggedTarget } from './http-logger.ts';
import { UNTRACED_PATHS, useOwnHttpSpans } from './http-spans.ts';
import { skipUnrecordedChildren } from './unsampled-children.ts';
import type * as Api from '@opentelemetry/api';
import type * as ContextAsyncHooks from '@opentelemetry/context-async-hooks';
import type * as Core from '@opentelemetry/core';
import type * as Resources from '@opentelemetry/resources';
import type * as SdkTrace from '@opentelemetry/sdk-trace';
import type * as Instrumentation from '@opentelemetry/instrumentation';
import type * as HttpInstr from '@opentelemetry/instrumentation-http';
import type * as ExpressInstr from '@opentelemetry/instrumentation-express';
import type * as PgInstr from '@opentelemetry/instrumentation-pg';
import type * as IORedisInstr from '@opentelemetry/instrumentation-ioredis';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import type * as OtlpProto from '@opentelemetry/exporter-trace-otlp-proto';

const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;

/**
 * The OpenTelemetry variables every deployable reads (their names and meaning are OpenTelemetry's own;
 * the exporter also reads the rest of its OTEL_EXPORTER_OTLP_* family itself). Spread into each config spec.
 */
export const tracingSpec = {
  OTEL_EXPORTER_OTLP_ENDPOINT: env.custom(
    'OTLP/HTTP collector base URL (/v1/traces is added); spans are exported only when set, and with it unset the OpenTelemetry SDK is not loaded',
    (raw) => {
      if (!URL.canParse(raw) || !['http:', 'https:'].includes(new URL(raw).protocol)) throw new Error('must be an http: or https: URL');
      return raw;
    },
    { default: '' },
  ),
  OTEL_EXPORTER_OTLP_PROTOCOL: env.oneOf(['http/protobuf', 'http/json'] as const, 'OTLP encoding over HTTP (grpc is not shipped)', { default: 'http/protobuf' }),
  OTEL_EXPORTER_OTLP_HEADERS: env.string('Headers of every export, `key=value,…` (a collector\'s API key)', { default: '', secret: true }),
  OTEL_TRACES_SAMPLER: env.oneOf(SAMPLERS, 'Which traces are recorded; at a public edge `traceidratio` ignores the sampled flag clients send', {
    default: 'parentbased_always_on',
  }),
  OTEL_TRACES_SAMPLER_ARG: env.custom(
    'Ratio of traces the *traceidratio samplers record, 0 to 1',
    (raw) => {
      const ratio = Number(raw);
      if (!/^\d*\.?\d+$/.test(raw) || ratio > 1) throw new Error('must be a number from 0 to 1');
      return ratio;
    },
    { default: 1 },
  ),
  // The trace SDK of the 3.x line reads no OTEL_BSP_* variable itself: this one is passed on here.
  OTEL_BSP_SCHEDULE_DELAY: env.integer('Milliseconds between two exports of the spans batched meanwhile', { min: 1, max: 3_600_000 }, { default: 5000 }),
};

export type TracingConfig = ConfigOf<typeof tracingSpec>;

/** What a deployable's spans leave out. */
export interface TracingOptions {
  /**
   * Spans of Express's route handlers (default true). A process that routes in a middleware of its own
   * (the gateway: its operation table names the server span itself) has no handler span that tells an
   * operator anything, and the instrumentation's per-layer bookkeeping runs on every request regardless.
   */
  express?: boolean;
  /**
   * Who makes the HTTP server and client spans: OpenTelemetry's HTTP instrumentation (the default), or the
   * process itself through http-spans.ts (`own`: withServerSpans around its app, startClientSpan around
   * its calls), which lets the sampler decide before anything is built for the span.
   */
  httpSpans?: 'instrumentation' | 'own';
}

/** A started SDK: flushes and stops the exporter on shutdown. */
export interface Tracing {
  shutdown(): Promise<void>;
}

let started: Tracing | undefined;

// The SDK is CommonJS as well as ESM: required here it loads synchronously, before the caller's next import.
const load = createRequire(import.meta.url);

function samplerOf(config: TracingConfig) {
  const sdk = load('@opentelemetry/sdk-trace') as typeof SdkTrace;
  const root = (name: string) => {
    if (name.endsWith('always_off')) return new sdk.AlwaysOffSampler();
    if (name.endsWith('traceidratio')) return new sdk.TraceIdRatioBasedSampler(config.OTEL_TRACES_SAMPLER_ARG);
    return new sdk.AlwaysOnSampler();
  };
  const name = config.OTEL_TRACES_SAMPLER;
  return name.startsWith('parentbased_') ? new sdk.ParentBasedSampler({ root: root(name) }) : root(name);
}

/**
 * Starts OpenTelemetry for `service` when `source` names OTEL_EXPORTER_OTLP_ENDPOINT (and OTEL_SDK_DISABLED
 * is not `true`): W3C trace context, spans of the HTTP server and client, Express, Postgres (pg) and Redis
 * (ioredis), batched to the collector by OTLP/HTTP. At most once per process; undefined when off, or when
 * the variables do not parse (the composition root then refuses to start and says why).
 */
export function startTracing(service: string, source: Readonly<Record<string, string | undefined>>, options: TracingOptions = {}): Tracing | undefined {
  if (started !== undefined || source.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return started;
  let config: TracingConfig;
  try {
    config = loadConfig(tracingSpec, { ...source, APP_ENV: undefined });
  } catch {
    return undefined;
  }
  if (config.OTEL_EXPORTER_OTLP_ENDPOINT === '') return undefined;

  const api = load('@opentelemetry/api') as typeof Api;
  const { AsyncLocalStorageContextManager } = load('@opentelemetry/context-async-hooks') as typeof ContextAsyncHooks;
  const { W3CTraceContextPropagator } = load('@opentelemetry/core') as typeof Core;
  const resources = load('@opentelemetry/resources') as typeof Resources;
  const sdk = load('@opentelemetry/sdk-trace') as typeof SdkTrace;
  const { registerInstrumentations } = load('@opentelemetry/instrumentation') as typeof Instrumentation;
  const { HttpInstrumentation } = load('@opentelemetry/instrumentation-http') as typeof HttpInstr;
  const { ExpressInstrumentation, ExpressLayerType } = load('@opentelemetry/instrumentation-express') as typeof ExpressInstr;
  const { PgInstrumentation } = load('@opentelemetry/instrumentation-pg') as typeof PgInstr;
  const { IORedisInstrumentation } = load('@opentelemetry/instrumentation-ioredis') as typeof IORedisInstr;
  // The exporters read the rest of their configuration (the endpoint, headers, timeout) from the environment.
  const exporter =
    config.OTEL_EXPORTER_OTLP_PROTOCOL === 'http/json'
      ? new (load('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpHttp).OTLPTraceExporter()
      : new (load('@opentelemetry/exporter-trace-otlp-proto') as typeof OtlpProto).OTLPTraceExporter();

  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, win over the deployable's name.
  const resource = resources.resourceFromAttributes({ 'service.name': service }).merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new sdk.TracerProvider({
    resource,
    sampler: samplerOf(config),
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter, scheduledDelayMillis: config.OTEL_BSP_SCHEDULE_DELAY })],
  });
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  // Sampling 1 in 10, nine requests in ten make their spans under an unsampled one: none of those is built.
  const tracers = skipUnrecordedChildren(provider);
  api.trace.setGlobalTracerProvider(tracers);
  registerInstrumentations({
    tracerProvider: tracers,
    instrumentations: [
      ...(options.httpSpans === 'own'
        ? []
        : [
            new HttpInstrumentation({
              ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.test(req.url ?? ''),
              // The query as the log lines show it (`loggedTarget`), in place of the instrumentation's, which
              // redacts a few names it knows and keeps every other value (a token a client put in a URL).
              startIncomingSpanHook: (req) => {
                const shown = loggedTarget(req.url ?? '/');
                const at = shown.indexOf('?');
                return at === -1 ? {} : { 'url.query': shown.slice(at + 1) };
              },
            }),
          ]),
      // Express's request handlers only (which name the route); a span per middleware cost more than the rest together.
      ...(options.express === false ? [] : [new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE, ExpressLayerType.ROUTER] })]),
      new PgInstrumentation(),
      // The command's name only: its arguments are keys and values (token ids, nonces, codes' digests) that
      // a trace store has no business keeping, and serialising them cost every request, sampled or not.
      new IORedisInstrumentation({ dbStatementSerializer: (command) => command }),
    ],
  });
  if (options.httpSpans === 'own') useOwnHttpSpans(tracers.getTracer(`${service}-http`));
  started = { shutdown: () => provider.shutdown() };
  return started;
}

/** Flushes and stops the SDK started in this process, if any (a composition root's last closer). */
export async function stopTracing(): Promise<void> {
  await started?.shutdown();
}
