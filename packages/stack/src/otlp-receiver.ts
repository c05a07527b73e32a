import { type IncomingMessage, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as an OTLP/HTTP JSON export names it, with the service that sent it. */
export interface ReceivedSpan {
  service: string;
  scope: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  kind: number;
  attributes: Record<string, unknown>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: number;
}

/** A local OTLP/HTTP trace receiver (POST /v1/traces), for the tests and the benchmark. */
export interface OtlpReceiver {
  /** The base URL for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  /** The spans of every JSON export so far (`http/json`); protobuf exports are only counted. */
  spans(): ReceivedSpan[];
  /** Export requests and bytes received so far, whatever their encoding. */
  received(): { exports: number; bytes: number };
  close(): Promise<void>;
}

type Json = Record<string, unknown>;
const list = (value: unknown): Json[] => (Array.isArray(value) ? (value as Json[]) : []);

/** `{ key, value: { stringValue | intValue | … } }` pairs as one object. */
function attributesOf(value: unknown): Record<string, unknown> {
  return Object.fromEntries(list(value).map((a) => [String(a.key), Object.values((a.value ?? {}) as Json)[0]]));
}

function spansOf(body: Json): ReceivedSpan[] {
  return list(body.resourceSpans).flatMap((rs) => {
    const service = String(attributesOf((rs.resource as Json | undefined)?.attributes)['service.name'] ?? '');
    return list(rs.scopeSpans).flatMap((ss) =>
      list(ss.spans).map((span) => ({
        service,
        scope: String((ss.scope as Json | undefined)?.name ?? ''),
        name: String(span.name),
        traceId: String(span.traceId),
        spanId: String(span.spanId),
        parentSpanId: String(span.parentSpanId ?? ''),
        kind: Number(span.kind),
        attributes: attributesOf(span.attributes),
        status: Number((span.status as Json | undefined)?.code ?? 0),
      })),
    );
  });
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Starts the receiver on 127.0.0.1 at a free port. It answers every export with success. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  let exports = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    void readBody(req).then((body) => {
      exports += 1;
      bytes += body.length;
      const json = /json/.test(String(req.headers['content-type']));
      if (req.method === 'POST' && req.url === '/v1/traces' && json) spans.push(...spansOf(JSON.parse(body.toString('utf8')) as Json));
      // An empty ExportTraceServiceResponse: `{}` in JSON, zero bytes in protobuf.
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => [...spans],
    received: () => ({ exports, bytes }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
