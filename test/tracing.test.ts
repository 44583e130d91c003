// --tracing-config-file: the server exports OpenTelemetry spans over OTLP/gRPC, as
// kube-apiserver does, to a collector: here a @grpc/grpc-js server in the test that serves the
// OTLP trace service's Export method and decodes its protobuf requests (with a description of
// the few OTLP messages it reads, written below). A request becomes a server span named as kube
// names it, with the HTTP attributes and its status, and its storage write a child span; a W3C
// traceparent from the admin (system:masters) is the span's parent, one from another user only
// a link.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { Server, ServerCredentials, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, request, startServer, type TestServer } from './helpers/server.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string }>;
  /** 0 unset, 1 ok, 2 error */
  statusCode: number;
  resource: Record<string, unknown>;
}

// The parts of opentelemetry-proto's trace service request this test reads (field numbers as
// the OTLP spec defines them); protobufjs skips the fields left out.
const OTLP_PROTO = `
syntax = "proto3";
package otlp;
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message Resource { repeated KeyValue attributes = 1; }
message ScopeSpans { repeated Span spans = 2; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; bytes parent_span_id = 4; string name = 5; int32 kind = 6;
  repeated KeyValue attributes = 9; repeated Link links = 13; Status status = 15;
}
message Status { string message = 2; int32 code = 3; }
message Link { bytes trace_id = 1; bytes span_id = 2; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue { oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; } }
`;
const ExportRequest = protobuf.parse(OTLP_PROTO).root.lookupType('otlp.ExportTraceServiceRequest');
const EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';

const hexId = (v: unknown): string => (v && (v as Uint8Array).length ? Buffer.from(v as Uint8Array).toString('hex') : '');
const attrs = (list: Array<{ key: string; value?: Record<string, unknown> }> = []): Record<string, unknown> =>
  Object.fromEntries(list.map((a) => [a.key, a.value?.stringValue ?? (a.value?.intValue !== undefined ? Number(a.value.intValue) : a.value?.boolValue ?? a.value?.doubleValue)]));

/** A collector: every span exported to it, flattened, and the gRPC methods called. */
function collector(): { spans: OtlpSpan[]; server: Server; paths: string[] } {
  const spans: OtlpSpan[] = [];
  const paths: string[] = [];
  const server = new Server();
  server.addService(
    {
      Export: {
        path: EXPORT_PATH,
        requestStream: false,
        responseStream: false,
        requestSerialize: (v: unknown) => Buffer.from(ExportRequest.encode(v as protobuf.Message).finish()),
        requestDeserialize: (b: Buffer) => ExportRequest.toObject(ExportRequest.decode(b), { longs: Number, arrays: true }),
        // an empty ExportTraceServiceResponse: full success
        responseSerialize: () => Buffer.alloc(0),
        responseDeserialize: () => ({}),
      },
    },
    {
      Export: (call: ServerUnaryCall<any, unknown>, cb: sendUnaryData<unknown>) => {
        paths.push(call.getPath());
        for (const rs of call.request.resourceSpans ?? []) {
          const resource = attrs(rs.resource?.attributes);
          for (const ss of rs.scopeSpans ?? []) {
            for (const sp of ss.spans ?? []) {
              spans.push({
                traceId: hexId(sp.traceId),
                spanId: hexId(sp.spanId),
                parentSpanId: hexId(sp.parentSpanId) || undefined,
                name: sp.name,
                kind: sp.kind,
                attributes: attrs(sp.attributes),
                links: (sp.links ?? []).map((l: any) => ({ traceId: hexId(l.traceId), spanId: hexId(l.spanId) })),
                statusCode: sp.status?.code ?? 0,
                resource,
              });
            }
          }
        }
        cb(null, {});
      },
    },
  );
  return { spans, server, paths };
}

/** Serves the collector, insecure, on a free port of 127.0.0.1. */
async function listen(server: Server): Promise<number> {
  const port = await freePort();
  await new Promise<void>((res, rej) => server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (err) => (err ? rej(err) : res())));
  return port;
}

const closeCollector = (server: Server) => new Promise<void>((res) => server.tryShutdown(() => res()));

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const OTHER_TRACE = '0af7651916cd43dd8448eb211c80319c';
const OTHER_PARENT = 'b7ad6b7169203331';

describe('--tracing-config-file: spans over OTLP/gRPC', () => {
  let s: TestServer;
  const c = collector();
  let dir = '';

  /** Waits for a span; `poke` (if given) runs between looks, to make more requests. */
  const spanNamed = async (pred: (sp: OtlpSpan) => boolean, what: string, poke?: () => Promise<void>): Promise<OtlpSpan> => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const hit = c.spans.find(pred);
      if (hit) return hit;
      if (Date.now() > deadline) throw new Error(`no span ${what}; the collector has: ${c.spans.map((x) => x.name).join(', ')}`);
      await new Promise((r) => setTimeout(r, 100));
      if (poke) await poke();
    }
  };

  beforeAll(async () => {
    const port = await listen(c.server);
    dir = mkdtempSync(join(tmpdir(), 'kubeshard-tracing-'));
    // (a sampling rate of 0: the client's sampled parent decides, as kube's ParentBased sampler)
    writeFileSync(join(dir, 'tracing.yaml'), `apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: 127.0.0.1:${port}\nsamplingRatePerMillion: 0\n`);
    writeFileSync(join(dir, 'tokens.csv'), 'bob-token,bob,u2\n');
    s = await startServer({ args: ['--tracing-config-file', join(dir, 'tracing.yaml'), '--token-auth-file', join(dir, 'tokens.csv')] });
  }, 60_000);

  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
    await closeCollector(c.server);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("a request is a server span named by its route, under the admin's traceparent, with its storage write as a child", async () => {
    const r = await request(s, 'POST', '/api/v1/namespaces/default/configmaps?fieldManager=t', { metadata: { name: 'traced' } }, { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01`, 'user-agent': 'trace-test/1.0' });
    expect(r.status).toBe(201);
    const server = await spanNamed((sp) => sp.traceId === TRACE_ID && sp.kind === 2, 'of kind SERVER in the client trace');
    expect(server.name).toBe('POST /api/v1/namespaces/{:namespace}/configmaps');
    expect(server.parentSpanId).toBe(PARENT_ID);
    expect(server.attributes).toMatchObject({
      'http.method': 'POST',
      'http.target': '/api/v1/namespaces/default/configmaps?fieldManager=t',
      'http.status_code': 201,
      'http.scheme': 'https',
      'user_agent.original': 'trace-test/1.0',
      'net.host.port': s.port,
    });
    expect(server.resource['service.name']).toBe('apiserver');
    // the handler's span under the request's, the storage write under the handler's
    const handler = await spanNamed((sp) => sp.traceId === TRACE_ID && sp.name === 'Create', '"Create" in the client trace');
    expect(handler.parentSpanId).toBe(server.spanId);
    expect(handler.attributes).toMatchObject({ client: 'trace-test/1.0' });
    const write = await spanNamed((sp) => sp.traceId === TRACE_ID && sp.name === 'Create etcd3', '"Create etcd3" in the client trace');
    expect(write.parentSpanId).toBe(handler.spanId);
    expect(write.attributes).toMatchObject({ key: 'default/traced', resource: 'configmaps' });
    expect(c.paths[0]).toBe(EXPORT_PATH);
  });

  it('an admission webhook call is a span under the handler\'s (a dead hook under Ignore: the span ends in error)', async () => {
    const dead = await freePort();
    const r = await request(s, 'POST', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', {
      metadata: { name: 'traced-hook' },
      webhooks: [{ name: 'traced.test.kubeshard.io', admissionReviewVersions: ['v1'], sideEffects: 'None', failurePolicy: 'Ignore', timeoutSeconds: 2, clientConfig: { url: `https://127.0.0.1:${dead}/` }, rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }] }],
    });
    expect(r.status).toBe(201);
    // the configuration reaches admission shortly after it is stored: create until a call is traced
    let n = 0;
    const hook = await spanNamed((sp) => sp.traceId === TRACE_ID && sp.name === 'Call validating webhook', '"Call validating webhook" in the client trace', async () => {
      const c2 = await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: `hooked-${n++}` } }, { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` });
      expect(c2.status).toBe(201);
    });
    expect(hook.statusCode).toBe(2);
    expect(hook.attributes).toMatchObject({ configuration: 'traced-hook', webhook: 'traced.test.kubeshard.io', resource: 'configmaps', operation: 'CREATE' });
    const handler = c.spans.find((sp) => sp.spanId === hook.parentSpanId);
    expect(handler?.name).toBe('Create');
    expect((await request(s, 'DELETE', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/traced-hook')).status).toBe(200);
  });

  it('a named read is named with {:name}; an error status is kept', async () => {
    const r = await request(s, 'GET', '/api/v1/namespaces/default/configmaps/none', undefined, { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` });
    expect(r.status).toBe(404);
    const sp = await spanNamed((x) => x.traceId === TRACE_ID && x.name === 'GET /api/v1/namespaces/{:namespace}/configmaps/{:name}', 'of the GET');
    expect(sp.attributes['http.status_code']).toBe(404);
  });

  it("another user's traceparent is only a link: the span starts a trace of its own (not sampled by the rate of 0)", async () => {
    const r = await request(s, 'GET', '/api/v1/namespaces/default/configmaps', undefined, { authorization: 'Bearer bob-token', traceparent: `00-${OTHER_TRACE}-${OTHER_PARENT}-01` });
    expect(r.status).toBe(200);
    // a root span decided by the sampling rate (0 per million): nothing exported, and never under bob's trace
    await new Promise((res) => setTimeout(res, 1500));
    expect(c.spans.filter((sp) => sp.traceId === OTHER_TRACE)).toEqual([]);
  });
});

describe('--tracing-config-file: the links of untrusted callers, sampled', () => {
  let s: TestServer;
  const c = collector();
  let dir = '';

  beforeAll(async () => {
    const port = await listen(c.server);
    dir = mkdtempSync(join(tmpdir(), 'kubeshard-tracing-'));
    writeFileSync(join(dir, 'tracing.yaml'), `apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nendpoint: dns:///127.0.0.1:${port}\nsamplingRatePerMillion: 1000000\n`);
    writeFileSync(join(dir, 'tokens.csv'), 'bob-token,bob,u2\n');
    s = await startServer({ args: ['--tracing-config-file', join(dir, 'tracing.yaml'), '--token-auth-file', join(dir, 'tokens.csv')] });
  }, 60_000);

  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
    await closeCollector(c.server);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('every request sampled; a non-privileged caller\'s context becomes a link of a new trace', async () => {
    const r = await request(s, 'GET', '/api/v1/namespaces/default/configmaps', undefined, { authorization: 'Bearer bob-token', traceparent: `00-${OTHER_TRACE}-${OTHER_PARENT}-01` });
    expect(r.status).toBe(200);
    const deadline = Date.now() + 20_000;
    let sp: OtlpSpan | undefined;
    while (!(sp = c.spans.find((x) => x.name === 'GET /api/v1/namespaces/{:namespace}/configmaps')) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 100));
    expect(sp).toBeDefined();
    expect(sp!.traceId).not.toBe(OTHER_TRACE);
    expect(sp!.parentSpanId ?? '').toBe('');
    expect(sp!.links).toEqual([{ traceId: OTHER_TRACE, spanId: OTHER_PARENT }]);
    expect(sp!.attributes['http.status_code']).toBe(200);
  });

  it('a bad configuration stops start-up', async () => {
    writeFileSync(join(dir, 'bad.yaml'), 'apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: 2000000\n');
    await expect(startServer({ args: ['--tracing-config-file', join(dir, 'bad.yaml')] })).rejects.toThrow(/sampling rate per million must be less than or equal to one million/);
    // an OTLP/HTTP URL is not a gRPC target: refused as kube refuses it
    writeFileSync(join(dir, 'http.yaml'), 'apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: http://otel-collector:4318\n');
    await expect(startServer({ args: ['--tracing-config-file', join(dir, 'http.yaml')] })).rejects.toThrow(/endpoint: Invalid value: "http:\/\/otel-collector:4318": unsupported scheme: http/);
  });
});
