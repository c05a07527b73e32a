// Imported first by index.ts: OpenTelemetry must hook node:http and ioredis before the modules after it
// load them (CONTRACT.md part 12). Does nothing unless OTEL_EXPORTER_OTLP_ENDPOINT is set. No Express
// spans: the gateway routes in its own middleware (pipeline/api.router.ts names the server span by the
// operation), so Express's instrumentation would only add its per-layer work to every request. Its HTTP
// spans are its own (service-kit's http-spans.ts: index.ts wraps the app, the upstream client makes the
// client span): the HTTP instrumentation doubled the gateway's CPU per request even when 1 in 10 was sampled.
import { startTracing } from '@platform/service-kit/tracing';

startTracing('gateway', process.env, { express: false, httpSpans: 'own' });
