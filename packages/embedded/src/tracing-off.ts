// Imported first by main.ts, before the composition roots (whose first import starts OpenTelemetry when
// OTEL_EXPORTER_OTLP_ENDPOINT is set): the three deployables share this one process, where one tracer
// would name every span after whichever started first. OTEL_SDK_DISABLED is OpenTelemetry's own switch.
process.env.OTEL_SDK_DISABLED = 'true';
