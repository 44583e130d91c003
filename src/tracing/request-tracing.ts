// OpenTelemetry spans for requests (--tracing-config-file), as kube-apiserver's WithTracing
// filter makes them (endpoints/filters/traces.go over otelhttp): one server span per HTTP
// request, named "<METHOD> /<prefix>/<group>/<version>/namespaces/{:namespace}/<resource>/{:name}/<subresource>"
// for a resource request and "<METHOD>" for any other, started when the request arrived, with
// the HTTP attributes, the audit ID and the status; child spans for what the request does in
// storage ("Create etcd3", "GuaranteedUpdate etcd3", ...) and for admission webhook calls.
// A W3C traceparent from the client is the span's parent when the caller is trusted with it
// (system:masters or system:monitoring, kube's notSystemPrivilegedGroup), else only a link.
// Spans leave in batches over OTLP/gRPC, insecure, as kube's (tracing-config.ts says where): the
// batch processor queues ended spans and a timer exports them, so a request never waits on the
// collector, and a collector that is down costs dropped spans, not latency.
//
// Zero cost when off: without the flag the server neither adds the filter nor runs requests
// in the async context, and childSpan() is one null check.
//
// How a child finds its request: the server runs each request's filter chain inside an
// AsyncLocalStorage holder (run()); the filter, once the user is known, puts the request's
// span in it; storage and admission code, however deep and after however many awaits, reads
// it back (childSpan()).
//
// Thread ownership: the front thread that serves the requests (each front thread has its own
// provider and exporter; module state per thread).
import { AsyncLocalStorage } from 'node:async_hooks';
import { hostname } from 'node:os';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Link, type Span, type Tracer } from '@opentelemetry/api';
import { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { createRequire } from 'node:module';
import type { OTLPTraceExporter as OtlpGrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { Filter } from '../http/filter-chain.js';
import type { ApiRequest, ResponseSink } from '../http/types.js';
import type { TracingConfig } from './tracing-config.js';

interface Holder {
  /** the request's server span */
  span: Span | undefined;
  /** the handler's span while the handler runs: what storage and webhook spans hang under */
  current?: Span;
}

const PRIVILEGED = new Set(['system:masters', 'system:monitoring']);
const propagator = new W3CTraceContextPropagator();
const headerGetter = {
  keys: (h: Record<string, string>) => Object.keys(h),
  get: (h: Record<string, string>, k: string) => h[k.toLowerCase()],
};

/** kube's getSpanNameFromRequestInfo: the route with the namespace and name as placeholders. */
export function spanName(req: ApiRequest): string {
  const info = req.requestInfo;
  if (!info || !info.isResourceRequest) return req.method;
  let name = '/' + info.apiPrefix;
  if (info.apiGroup) name += '/' + info.apiGroup;
  name += '/' + info.apiVersion;
  if (info.namespace) name += '/namespaces/{:namespace}';
  name += '/' + info.resource;
  if (info.name) name += '/{:name}';
  if (info.subresource) name += '/' + info.subresource;
  return `${req.method} ${name}`;
}

/**
 * The OTLP/gRPC exporter, loaded only when tracing is configured: gRPC's client is a large
 * module that a server without --tracing-config-file never needs in its memory.
 */
function grpcExporter(target: string): OtlpGrpcExporter {
  const require = createRequire(import.meta.url);
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-grpc') as typeof import('@opentelemetry/exporter-trace-otlp-grpc');
  const { credentials } = require('@grpc/grpc-js') as typeof import('@grpc/grpc-js');
  return new OTLPTraceExporter({ url: target, credentials: credentials.createInsecure() });
}

export class RequestTracing {
  private readonly als = new AsyncLocalStorage<Holder>();
  private readonly provider: BasicTracerProvider;
  readonly tracer: Tracer;

  constructor(
    config: TracingConfig,
    private readonly hostPort: { host: string; port: number },
    /** kube's apiserver identity (service.instance.id) */
    instanceId: string,
  ) {
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'apiserver', 'host.name': hostname(), 'service.instance.id': instanceId }),
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.samplingRatePerMillion / 1_000_000) }),
      spanProcessors: [new BatchSpanProcessor(grpcExporter(config.target), { scheduledDelayMillis: 500 })],
    });
    this.tracer = this.provider.getTracer('k8s.io/apiserver');
  }

  /** Runs a request's chain in its own holder (the filter fills it in). */
  run(fn: () => void): void {
    this.als.run({ span: undefined }, fn);
  }

  /**
   * The filter that opens the request's span: after authentication (whether the client's
   * trace context is trusted depends on the user), started at the request's arrival.
   */
  filter(): Filter {
    return {
      name: 'tracing',
      run: (req, res) => {
        const holder = this.als.getStore();
        if (!holder) return;
        const span = this.startServerSpan(req, res);
        holder.span = span;
        res.onDone(() => {
          const status = (res as { sentStatus?: number }).sentStatus ?? 0;
          if (status) span.setAttribute('http.status_code', status);
          const bytes = (res as { bytesSent?: number }).bytesSent ?? -1;
          if (bytes >= 0) span.setAttribute('http.response_content_length', bytes);
          if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        });
      },
    };
  }

  private startServerSpan(req: ApiRequest, res: ResponseSink): Span {
    const parentCtx = req.headers['traceparent'] ? propagator.extract(ROOT_CONTEXT, req.headers, headerGetter) : ROOT_CONTEXT;
    const remote = trace.getSpanContext(parentCtx);
    const trusted = !!req.user && req.user.groups.some((g) => PRIVILEGED.has(g));
    const links: Link[] = remote && !trusted ? [{ context: remote }] : [];
    const startedAt = (res as { startedAt?: number }).startedAt;
    const attributes: Attributes = {
      'http.method': req.method,
      'http.scheme': 'https',
      'http.target': req.rawQuery ? `${req.path}?${req.rawQuery}` : req.path,
      'net.host.name': this.hostPort.host,
      'net.host.port': this.hostPort.port,
      'net.sock.peer.addr': req.remoteAddress,
      'net.protocol.name': 'http',
    };
    const ua = req.headers['user-agent'];
    if (ua) attributes['user_agent.original'] = ua;
    if (req.headers['content-length']) attributes['http.request_content_length'] = Number(req.headers['content-length']);
    const auditId = req.headers['audit-id'];
    if (auditId) attributes['audit-id'] = auditId.slice(0, 64);
    return this.tracer.startSpan(
      spanName(req),
      { kind: SpanKind.SERVER, attributes, links, startTime: startedAt ? performance.timeOrigin + startedAt : undefined },
      remote && trusted ? parentCtx : ROOT_CONTEXT,
    );
  }

  /** A span under the current request's (its handler's while that runs; undefined outside a request). */
  child(name: string, attributes: Attributes): Span | undefined {
    const h = this.als.getStore();
    const parent = h?.current ?? h?.span;
    if (!parent) return undefined;
    return this.tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes }, trace.setSpan(ROOT_CONTEXT, parent));
  }

  /** The handler's span: a child of the request's, and the parent of what the handler does until end() is called. */
  handler(name: string, attributes: Attributes): { span: Span; end: (err?: unknown) => void } | undefined {
    const h = this.als.getStore();
    const span = this.child(name, attributes);
    if (!h || !span) return undefined;
    h.current = span;
    return {
      span,
      end: (err) => {
        if (h.current === span) h.current = undefined;
        endSpan(span, err);
      },
    };
  }

  /** Sends what is buffered and stops. */
  async shutdown(): Promise<void> {
    await this.provider.shutdown();
  }
}

/** This thread's tracing, when --tracing-config-file is given. */
let active: RequestTracing | null = null;

export function setTracing(t: RequestTracing | null): void {
  active = t;
}

/** Whether spans are made at all (callers skip building span attributes when not). */
export function tracingOn(): boolean {
  return active !== null;
}

/** A child span of the current request, or undefined (tracing off, or outside a request). */
export function childSpan(name: string, attributes: Attributes): Span | undefined {
  return active === null ? undefined : active.child(name, attributes);
}

/** kube's handler spans (handlers/create.go, get.go, ...): one per verb that has one. */
const HANDLER_SPANS: Record<string, string> = { create: 'Create', get: 'Get', list: 'List', update: 'Update', patch: 'Patch', delete: 'Delete', deletecollection: 'Delete' };

/**
 * Runs a verb's handler under kube's handler span ("Create", "Get", ...) with its attributes
 * (kube's traceFields: audit-id, client, accept); with tracing off, just runs it.
 */
export function inHandlerSpan<T>(verb: string, req: ApiRequest, run: () => T): T {
  if (active === null) return run();
  const name = HANDLER_SPANS[verb];
  const h = name ? active.handler(name, { 'audit-id': (req.headers['audit-id'] ?? '').slice(0, 64), client: req.headers['user-agent'] ?? '', accept: req.headers['accept'] ?? '' }) : undefined;
  if (!h) return run();
  let r: T;
  try {
    r = run();
  } catch (err) {
    h.end(err);
    throw err;
  }
  if (r instanceof Promise) {
    return r.then(
      (v) => {
        h.end();
        return v;
      },
      (err) => {
        h.end(err);
        throw err;
      },
    ) as T;
  }
  h.end();
  return r;
}

/** Ends a child span, marking a failure. */
export function endSpan(span: Span | undefined, err?: unknown): void {
  if (!span) return;
  if (err !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message ?? String(err) });
  span.end();
}
