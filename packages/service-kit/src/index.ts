// The main entry: what every deployable needs. A database (`./database`: knex, pg) and an OpenAPI-validated
// API app (`./api-app`: express-openapi-validator) are entries of their own, so that the gateway, which
// needs neither, does not load them (their modules were ~6 MB of its live heap).
export * from './answer-head.ts';
export { closeAfterAnswer } from './connection.ts';
export * from './bootstrap.ts';
export * from './config.ts';
export * from './crash.ts';
export * from './health.ts';
export * from './http-app.ts';
export * from './http-guards.ts';
export * from './http-logger.ts';
export { type ClientSpan, startClientSpan, withServerSpans } from './http-spans.ts';
export * from './internal-assertion.ts';
export * from './limits-config.ts';
export * from './logger.ts';
export * from './metrics.ts';
export * from './openapi-document.ts';
export * from './openapi-route.ts';
export * from './paths.ts';
export * from './periodic.ts';
export * from './redis.ts';
export * from './redis-topology.ts';
export * from './representation.ts';
export { daysInMonth, parseRfc3339DateTime } from './rfc3339-date-time.ts';
export * from './request-deadline.ts';
export * from './request-envelope.ts';
export * from './series-histogram.ts';
export * from './server.ts';
export * from './slot-ledger.ts';
export * from './station-generation.ts';
export * from './trace-context.ts';
export { type TracingConfig, stopTracing, tracingSpec } from './tracing.ts';
