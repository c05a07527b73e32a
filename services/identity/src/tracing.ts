// Imported first by index.ts: OpenTelemetry must hook node:http, express, pg and ioredis before the
// modules after it load them (CONTRACT.md part 12). Does nothing unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
import { startTracing } from '@platform/service-kit/tracing';

startTracing('identity', process.env);
