import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';

/**
 * An OTLP/HTTP traces receiver on loopback, as a collector would be: `POST /v1/traces` in protobuf
 * (`application/x-protobuf`, decoded with the definitions of @opentelemetry/otlp-transformer, the exporters' own) or
 * JSON (`application/json`). Every span it got, in one shape whatever the protocol, and every body as it came (for a
 * secret scan).
 */
export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`: what OTEL_EXPORTER_OTLP_ENDPOINT is set to. */
  url: string;
  spans: ReceivedSpan[];
  /** Each request: its content type, and its body as text (protobuf's strings are in it as they are) and decoded. */
  requests: Array<{ contentType: string; text: string }>;
  close(): Promise<void>;
}

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: number;
  /** Start, nanoseconds since the epoch (as a double: order, not exactness). */
  startNs: number;
}

/** OTLP's span kinds. */
export const SPAN_KIND = { internal: 1, server: 2, client: 3 } as const;

type AnyValue = { stringValue?: string; boolValue?: boolean; intValue?: number | string; doubleValue?: number; arrayValue?: { values?: AnyValue[] } };
type KeyValue = { key: string; value?: AnyValue };
type OtlpSpan = {
  traceId: string | Uint8Array;
  spanId: string | Uint8Array;
  parentSpanId?: string | Uint8Array;
  name: string;
  kind?: number | string;
  attributes?: KeyValue[];
  events?: Array<{ name: string; attributes?: KeyValue[] }>;
  status?: { code?: number | string };
  startTimeUnixNano?: number | string;
};
type ExportRequest = { resourceSpans?: Array<{ resource?: { attributes?: KeyValue[] }; scopeSpans?: Array<{ spans?: OtlpSpan[] }> }> };

const hex = (id: string | Uint8Array | undefined) => (id === undefined ? '' : typeof id === 'string' ? id : Buffer.from(id).toString('hex'));

function value(v: AnyValue | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(value);
  return undefined;
}

const attributes = (list: KeyValue[] | undefined) => Object.fromEntries((list ?? []).map((kv) => [kv.key, value(kv.value)]));

function decodeProtobuf(body: Buffer): ExportRequest {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the exporters' own generated protobuf code (no types of its messages)
  const root = require('@opentelemetry/otlp-transformer/build/src/generated/root') as {
    opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: { decode(b: Uint8Array): unknown; toObject(m: unknown, o: object): ExportRequest } } } } } };
  };
  const type = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
  return type.toObject(type.decode(body), { longs: Number, enums: Number, defaults: false });
}

const KINDS: Record<string, number> = { SPAN_KIND_INTERNAL: 1, SPAN_KIND_SERVER: 2, SPAN_KIND_CLIENT: 3, SPAN_KIND_PRODUCER: 4, SPAN_KIND_CONSUMER: 5 };
const num = (v: number | string | undefined) => (typeof v === 'string' ? (KINDS[v] ?? Number(v)) : (v ?? 0));

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: OtlpReceiver['requests'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
        const contentType = String(req.headers['content-type'] ?? '');
        if (req.method !== 'POST' || req.url !== '/v1/traces') {
          res.writeHead(404).end();
          return;
        }
        const json = contentType.startsWith('application/json');
        const decoded = json ? (JSON.parse(body.toString('utf8')) as ExportRequest) : decodeProtobuf(body);
        requests.push({ contentType, text: `${body.toString('utf8')}\n${JSON.stringify(decoded)}` });
        for (const rs of decoded.resourceSpans ?? []) {
          const service = String(attributes(rs.resource?.attributes)['service.name'] ?? '');
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                service,
                traceId: hex(s.traceId),
                spanId: hex(s.spanId),
                parentSpanId: hex(s.parentSpanId),
                name: s.name,
                kind: num(s.kind),
                attributes: attributes(s.attributes),
                events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attributes(e.attributes) })),
                status: num(s.status?.code),
                startNs: Number(s.startTimeUnixNano ?? 0),
              });
            }
          }
        }
        if (json) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      } catch (err) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end((err as Error).message);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
