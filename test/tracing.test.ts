// --tracing-config-file: the server exports OpenTelemetry spans over OTLP/HTTP to a collector,
// here a plain node HTTP server in the test that keeps what is posted to /v1/traces. A request
// becomes a server span named as kube names it, with the HTTP attributes and its status, and
// its storage write a child span; a W3C traceparent from the admin (system:masters) is the
// span's parent, one from another user only a link.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createServer, type Server } from 'node:http';
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
  resource: Record<string, unknown>;
}

/** OTLP/JSON ids are hex (the spec's JSON mapping); base64 is accepted as well. */
const hexId = (v: unknown): string => {
  const s = String(v ?? '');
  return /^[0-9a-f]*$/i.test(s) ? s.toLowerCase() : Buffer.from(s, 'base64').toString('hex');
};
const attrs = (list: Array<{ key: string; value: Record<string, unknown> }> = []): Record<string, unknown> =>
  Object.fromEntries(list.map((a) => [a.key, a.value.stringValue ?? (a.value.intValue !== undefined ? Number(a.value.intValue) : a.value.boolValue ?? a.value.doubleValue)]));

/** A collector: every span posted to /v1/traces, flattened. */
function collector(): { spans: OtlpSpan[]; server: Server; contentTypes: string[] } {
  const spans: OtlpSpan[] = [];
  const contentTypes: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      contentTypes.push(String(req.headers['content-type']));
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const rs of body.resourceSpans ?? []) {
        const resource = attrs(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? []) {
          for (const sp of ss.spans ?? []) {
            spans.push({
              traceId: hexId(sp.traceId),
              spanId: hexId(sp.spanId),
              parentSpanId: sp.parentSpanId ? hexId(sp.parentSpanId) : undefined,
              name: sp.name,
              kind: sp.kind,
              attributes: attrs(sp.attributes),
              links: (sp.links ?? []).map((l: any) => ({ traceId: hexId(l.traceId), spanId: hexId(l.spanId) })),
              resource,
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return { spans, server, contentTypes };
}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const OTHER_TRACE = '0af7651916cd43dd8448eb211c80319c';
const OTHER_PARENT = 'b7ad6b7169203331';

describe('--tracing-config-file: spans over OTLP/HTTP', () => {
  let s: TestServer;
  const c = collector();
  let dir = '';

  const spanNamed = async (pred: (sp: OtlpSpan) => boolean, what: string): Promise<OtlpSpan> => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const hit = c.spans.find(pred);
      if (hit) return hit;
      if (Date.now() > deadline) throw new Error(`no span ${what}; the collector has: ${c.spans.map((x) => x.name).join(', ')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  beforeAll(async () => {
    const port = await freePort();
    await new Promise<void>((r) => c.server.listen(port, '127.0.0.1', r));
    dir = mkdtempSync(join(tmpdir(), 'kubeshard-tracing-'));
    // (a sampling rate of 0: the client's sampled parent decides, as kube's ParentBased sampler)
    writeFileSync(join(dir, 'tracing.yaml'), `apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: 127.0.0.1:${port}\nsamplingRatePerMillion: 0\n`);
    writeFileSync(join(dir, 'tokens.csv'), 'bob-token,bob,u2\n');
    s = await startServer({ args: ['--tracing-config-file', join(dir, 'tracing.yaml'), '--token-auth-file', join(dir, 'tokens.csv')] });
  }, 60_000);

  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
    await new Promise((r) => c.server.close(r));
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
    expect(c.contentTypes[0]).toMatch(/^application\/json/);
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
    const port = await freePort();
    await new Promise<void>((r) => c.server.listen(port, '127.0.0.1', r));
    dir = mkdtempSync(join(tmpdir(), 'kubeshard-tracing-'));
    writeFileSync(join(dir, 'tracing.yaml'), `apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nendpoint: http://127.0.0.1:${port}\nsamplingRatePerMillion: 1000000\n`);
    writeFileSync(join(dir, 'tokens.csv'), 'bob-token,bob,u2\n');
    s = await startServer({ args: ['--tracing-config-file', join(dir, 'tracing.yaml'), '--token-auth-file', join(dir, 'tokens.csv')] });
  }, 60_000);

  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
    await new Promise((r) => c.server.close(r));
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
  });
});
