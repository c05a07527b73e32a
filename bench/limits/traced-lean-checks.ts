// Limit E′ traced: limit E′ (lean-checks.ts) doing the gateway's tracing work too, with the gateway's own
// OpenTelemetry setup (gateway/src/tracing.ts: service-kit's startTracing, no Express spans, HTTP spans made
// by http-spans.ts) read from the same OTEL_* variables: a server span per request (named by the route, as
// the gateway's router names it), the Redis admission's span (the ioredis instrumentation, as the gateway's),
// a client span around the upstream call whose `traceparent` goes to risk; sampled by OTEL_TRACES_SAMPLER
// (and _ARG), batched by OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT. Without the endpoint the SDK is not loaded
// and the limit continues the caller's trace as the gateway does without it (a `traceparent` of its own
// upstream): the same work minus tracing. What the gateway's tracing costs beyond the SDK's own, beside it.
// Usage: OTEL_EXPORTER_OTLP_ENDPOINT=<url> [OTEL_TRACES_SAMPLER=…] node bench/limits/traced-lean-checks.ts
//   (the options of checks.ts)
import { createServer } from 'node:http';
import { startTracing } from '@platform/service-kit/tracing';

// Before anything that loads ioredis (checks-of.ts, and common.ts through service-kit's index): its
// instrumentation hooks require(), which is why the gateway imports its tracing.ts first.
const tracing = startTracing('limit-e-traced', process.env, { express: false, httpSpans: 'own' });
const endpoint = process.env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '';
if (tracing === undefined && endpoint !== '' && process.env.OTEL_SDK_DISABLED?.trim().toLowerCase() !== 'true') {
  // The gateway refuses to start on OTEL_* it cannot parse; measured untraced, this limit would mislead.
  process.stderr.write('traced-lean-checks: the OTEL_* variables do not parse (service-kit tracingSpec)\n');
  process.exit(2);
}
const { formatTraceparent, nameServerSpan, startClientSpan, traceContextOf, withServerSpans } = await import('@platform/service-kit');
const { checkedHandler, checksOf } = await import('./checks-of.ts');
const { checkedUpstreamHeaders, limitOptions, listen, undiciForwarder } = await import('./common.ts');

/** The one operation the bench sends a checking limit, named as the gateway's operation table names it. */
const BY_ID = { prefix: '/v1/weather-stations/by/id/', route: '/v1/weather-stations/by/id/{stationId}' };

const options = limitOptions('traced-lean-checks', ['target', 'redisUrl', 'keySecret', 'redisPrefix', 'jwksUrl', 'issuer']);
const upstream = new URL(options.target);
const { forward } = undiciForwarder(options.target);
const checked = checkedHandler(checksOf(options), (req, res, body, vouch) => {
  const headers = checkedUpstreamHeaders(req, body, vouch);
  const target = req.url ?? '/';
  const span = startClientSpan(req.method ?? 'GET', upstream, target, headers);
  if (span === undefined) headers.traceparent = formatTraceparent(traceContextOf(req.headers.traceparent, undefined));
  forward(req, res, headers, body.length === 0 ? null : body, span);
});
const server = createServer(
  withServerSpans((req, res) => {
    if (req.url?.startsWith(BY_ID.prefix) === true) nameServerSpan(req.method ?? 'GET', BY_ID.route);
    checked(req, res);
  }),
);
const sampler = [process.env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on', process.env.OTEL_TRACES_SAMPLER_ARG].filter(Boolean).join(' ');
process.stdout.write(tracing === undefined ? 'tracing off\n' : `tracing to ${endpoint}, sampler ${sampler}\n`);
listen(server, options.port);
