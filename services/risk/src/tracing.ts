// Imported first by index.ts: OpenTelemetry must hook node:http, express, pg and ioredis before the
// modules after it load them (CONTRACT.md part 12). Does nothing unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
//
// Risk makes its HTTP server spans itself (service-kit's http-spans.ts, `withServerSpans` in index.ts,
// named by the validated operation in createApiApp), as the gateway does: OpenTelemetry's HTTP and Express
// instrumentations cost risk ~80 µs per answer, sampled or not (the bench diary, `git show f0a4e11:bench/README.md`, issue 27: 171-178 µs an
// answer traced against 89-98 with its own spans, 67 untraced). Its outbound HTTP (the JWKS refresh, in the
// background) has no trace to continue. Postgres and Redis keep their instrumentations.
import { startTracing } from '@platform/service-kit/tracing';

startTracing('risk', process.env, { express: false, httpSpans: 'own' });
