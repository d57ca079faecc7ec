import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import protobuf from 'protobufjs';

// A real OTLP/HTTP trace receiver on loopback for tests/traces.test.ts: it
// answers POST /v1/traces as a collector does and keeps every request's raw
// body, decoded from either protocol the service can send (http/json, or
// http/protobuf with the OTLP message definitions below).

/**
 * The messages of opentelemetry-proto (opentelemetry/proto/{common,resource,trace}/v1)
 * an ExportTraceServiceRequest is made of, with their field numbers; links
 * are left out (the decoder skips unknown fields).
 */
const OTLP_PROTO = `
syntax = "proto3";
package otlp;
message AnyValue {
  oneof value {
    string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4;
    ArrayValue array_value = 5; KeyValueList kvlist_value = 6; bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message Status { string message = 2; int32 code = 3; }
message Event { fixed64 time_unix_nano = 1; string name = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; bytes parent_span_id = 4; fixed32 flags = 16;
  string name = 5; int32 kind = 6; fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9; uint32 dropped_attributes_count = 10;
  repeated Event events = 11; uint32 dropped_events_count = 12; uint32 dropped_links_count = 14; Status status = 15;
}
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
`;

const ExportTraceServiceRequest = protobuf.parse(OTLP_PROTO).root.lookupType('otlp.ExportTraceServiceRequest');

/** SpanKind of the OTLP enum. */
export const SERVER = 2;
export const CLIENT = 3;
/** Status.StatusCode */
export const STATUS_ERROR = 2;

type AttributeValue = string | number | boolean | undefined;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, AttributeValue>;
  status: { code: number; message: string };
  eventNames: string[];
  resource: Record<string, AttributeValue>;
  /** Nanoseconds since the epoch. */
  start: bigint;
  end: bigint;
  /** The W3C tracestate it carries, '' for none. */
  traceState: string;
  scope: string;
}

interface ReceivedRequest {
  path: string;
  contentType: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

// The JSON mapping of OTLP and protobufjs's toObject() both give camelCase names; only the ids differ (hex text or bytes).
interface WireValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
}
interface WireSpan {
  traceId: string | Uint8Array;
  spanId: string | Uint8Array;
  parentSpanId?: string | Uint8Array;
  name: string;
  kind?: number;
  attributes?: { key: string; value?: WireValue }[];
  status?: { code?: number; message?: string };
  events?: { name: string }[];
  startTimeUnixNano?: string | number;
  endTimeUnixNano?: string | number;
  traceState?: string;
}
interface WireRequest {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value?: WireValue }[] };
    scopeSpans?: { scope?: { name?: string }; spans?: WireSpan[] }[];
  }[];
}

function hex(id: string | Uint8Array | undefined): string {
  if (id === undefined) return '';
  return typeof id === 'string' ? id : Buffer.from(id).toString('hex');
}

function attributes(list: { key: string; value?: WireValue }[] = []): Record<string, AttributeValue> {
  const result: Record<string, AttributeValue> = {};
  for (const { key, value } of list) {
    result[key] = value?.stringValue ?? value?.boolValue ?? (value?.intValue !== undefined ? Number(value.intValue) : value?.doubleValue);
  }
  return result;
}

/** The spans of one export request, whichever protocol it came in. */
export function decode(request: Pick<ReceivedRequest, 'contentType' | 'body'>): ReceivedSpan[] {
  const wire: WireRequest = request.contentType.startsWith('application/json')
    ? (JSON.parse(request.body.toString('utf8')) as WireRequest)
    : (ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(request.body), { longs: String, defaults: false }) as WireRequest);
  return (wire.resourceSpans ?? []).flatMap((resourceSpans) =>
    (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        traceId: hex(span.traceId),
        spanId: hex(span.spanId),
        parentSpanId: hex(span.parentSpanId),
        name: span.name,
        kind: span.kind ?? 0,
        attributes: attributes(span.attributes),
        status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
        eventNames: (span.events ?? []).map((event) => event.name),
        resource: attributes(resourceSpans.resource?.attributes),
        start: BigInt(span.startTimeUnixNano ?? 0),
        end: BigInt(span.endTimeUnixNano ?? 0),
        traceState: span.traceState ?? '',
        scope: scope.scope?.name ?? '',
      })),
    ),
  );
}

export interface OtlpReceiver {
  /** http://127.0.0.1:<port>, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  base: string;
  requests: ReceivedRequest[];
  spans(): ReceivedSpan[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const requests: ReceivedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', contentType: req.headers['content-type'] ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      // An empty ExportTraceServiceResponse: full success, in the encoding the client sent.
      const json = (req.headers['content-type'] ?? '').startsWith('application/json');
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
      res.end(json ? '{}' : undefined);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    requests,
    spans: () => requests.filter((r) => r.path === '/v1/traces').flatMap(decode),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
