// kube-apiserver's request metrics, kept on the front thread (which owns every request)
// in plain maps, and written out in Prometheus' text format when /metrics is scraped.
//
// Why not one prom-client metric per series: a labelled prom-client update hashes its
// label set on every call, and this runs on every request of the hot path (tens of
// thousands a second). Here a request costs one key string and one map lookup; the text
// is made only on a scrape. The process metrics come from prom-client (metrics-endpoint.ts).
import type { ApiRequest, RequestObserver } from '../http/types.js';
import { renderFlowControl, type FlowControlSnapshot } from './flowcontrol-metrics.js';

/** apiserver_request_duration_seconds' buckets, as kube's */
const DURATION_BUCKETS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];
/** apiserver_request_sli_duration_seconds' buckets, as kube's */
const SLI_BUCKETS = [0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];
/** subresources kube reports as CONNECT whatever the HTTP verb (its validConnectRequests) */
const CONNECT_SUBRESOURCES = new Set(['log', 'exec', 'portforward', 'attach', 'proxy']);
/** apiserver_response_sizes' buckets: 1 KB to 1 GB, ×10 */
const SIZE_BUCKETS = [1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];

/** The verb label: kube's reported verb (APPLY for a server-side apply patch). */
const REPORTED_VERB: Record<string, string> = {
  get: 'GET',
  list: 'LIST',
  watch: 'WATCH',
  create: 'POST',
  update: 'PUT',
  patch: 'PATCH',
  delete: 'DELETE',
  deletecollection: 'DELETECOLLECTION',
  connect: 'CONNECT',
};

interface Labels {
  verb: string;
  dry_run: string;
  group: string;
  version: string;
  resource: string;
  subresource: string;
  scope: string;
}

/** Per-bucket counts of observed values (cumulated only when written out). Front thread. */
export class Histogram {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(readonly bounds: number[]) {
    this.counts = new Float64Array(bounds.length);
  }
  observe(v: number): void {
    const b = this.bounds;
    // cumulative buckets are summed on output; a sample lands in its first bucket only
    let i = 0;
    while (i < b.length && v > b[i]) i++;
    if (i < b.length) this.counts[i]++;
    this.sum += v;
    this.count++;
  }
}

interface Series {
  labels: Labels;
  byCode: Map<number, number>;
  duration: Histogram;
  /** the duration less what kube's SLI leaves out (priority-and-fairness queueing, webhooks) */
  sli: Histogram;
  sizes: Histogram;
}

/** kube's CleanScope: a create names one object (its body does), like a request with a name. */
function scopeOf(info: { name: string; namespace: string; verb: string }): 'resource' | 'namespace' | 'cluster' {
  return info.name || info.verb === 'create' ? 'resource' : info.namespace ? 'namespace' : 'cluster';
}

/** The series' labels of a request; key is them joined, for the maps. */
function labelsOf(req: ApiRequest): Labels {
  const info = req.requestInfo;
  // (the query is parsed only when it names dryRun: most requests never parse theirs)
  const dryRun = req.rawQuery.includes('dryRun') ? req.query.getAll('dryRun') : [];
  const dry_run = dryRun.length ? [...new Set(dryRun)].sort().join(',') : '';
  if (!info || !info.isResourceRequest) {
    return { verb: req.method, dry_run, group: '', version: '', resource: '', subresource: '', scope: '' };
  }
  let verb = REPORTED_VERB[info.verb] ?? info.verb.toUpperCase();
  if (verb === 'PATCH' && (req.headers['content-type'] ?? '').startsWith('application/apply-patch')) verb = 'APPLY';
  if (info.subresource && CONNECT_SUBRESOURCES.has(info.subresource)) verb = 'CONNECT';
  const scope = scopeOf(info);
  return { verb, dry_run, group: info.apiGroup, version: info.apiVersion, resource: info.resource, subresource: info.subresource, scope };
}

function keyOf(l: Labels): string {
  return `${l.verb}\0${l.dry_run}\0${l.group}\0${l.version}\0${l.resource}\0${l.subresource}\0${l.scope}`;
}

export function escapeValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/** `{a="x",b="y"}`, names sorted as kube writes them. */
export function labelText(pairs: Record<string, string>): string {
  const names = Object.keys(pairs).sort();
  return `{${names.map((n) => `${n}="${escapeValue(pairs[n])}"`).join(',')}}`;
}

/** What a histogram is written from: per-bucket (not cumulative) counts, their sum and count. */
export interface HistogramData {
  readonly bounds: readonly number[];
  readonly counts: Float64Array;
  readonly sum: number;
  readonly count: number;
}

export function histogramText(name: string, pairs: Record<string, string>, h: HistogramData, out: string[]): void {
  let cum = 0;
  for (let i = 0; i < h.bounds.length; i++) {
    cum += h.counts[i];
    out.push(`${name}_bucket${labelText({ ...pairs, le: String(h.bounds[i]) })} ${cum}`);
  }
  out.push(`${name}_bucket${labelText({ ...pairs, le: '+Inf' })} ${h.count}`);
  out.push(`${name}_sum${labelText(pairs)} ${h.sum}`);
  out.push(`${name}_count${labelText(pairs)} ${h.count}`);
}

export interface Gauges {
  /** requests holding a seat of the inflight limits, by kind */
  inflight(): { readOnly: number; mutating: number };
  /** objects stored, by group-resource ("configmaps", "deployments.apps") */
  storageObjects(): Array<[string, number]>;
  /** priority and fairness, when it is on: the apiserver_flowcontrol_* series */
  flowControl?: () => FlowControlSnapshot;
}

export class RequestMetrics implements RequestObserver {
  private series = new Map<string, Series>();
  /** resource -> verb -> "group/version/subresource/scope" -> series: the usual request's way in */
  private fast = new Map<string, Map<string, Map<string, Series>>>();
  /** open long-running requests (watches, connects), by label key */
  private longRunning = new Map<string, { labels: Labels; n: number }>();
  /** requests ended in self-defense, by label key and code */
  private terminations = new Map<string, { labels: Labels; code: number; n: number }>();
  /** deprecated group-version-resources requested since start */
  private deprecated = new Map<string, Record<string, string>>();
  /** metrics other modules of this thread keep (e.g. PodSecurity's), appended to each render */
  private readonly sections: Array<() => string> = [];

  constructor(
    private gauges: Gauges,
    /** metric names switched off by --disabled-metrics (the process metrics' too, see metrics-endpoint.ts) */
    readonly disabled: Set<string> = new Set(),
  ) {}

  /** Adds metric families kept elsewhere on this thread, rendered (Prometheus text, ending in a newline) after these. */
  addSection(render: () => string): void {
    this.sections.push(render);
  }

  /** One finished request: its status, its body's size (-1 for a stream) and how long it took. */
  finished(req: ApiRequest, code: number, bytes: number, seconds: number): void {
    const s = this.seriesOf(req);
    s.byCode.set(code, (s.byCode.get(code) ?? 0) + 1);
    s.duration.observe(seconds);
    const excluded = req.sliExcludedSeconds;
    s.sli.observe(excluded === undefined ? seconds : Math.max(0, seconds - excluded));
    if (bytes >= 0) s.sizes.observe(bytes);
  }

  /**
   * The request's series. The usual request (a resource request of a plain verb, no dryRun)
   * is found through nested maps of its own path strings, with no label object or key
   * string made; anything else goes through the joined key.
   */
  private seriesOf(req: ApiRequest): Series {
    const info = req.requestInfo;
    if (info && info.isResourceRequest && info.verb !== 'patch' && !req.rawQuery.includes('dryRun')) {
      const scope = info.name || info.verb === 'create' ? 2 : info.namespace ? 1 : 0;
      let byVerb = this.fast.get(info.resource);
      if (!byVerb) this.fast.set(info.resource, (byVerb = new Map()));
      let rest = byVerb.get(info.verb);
      if (!rest) byVerb.set(info.verb, (rest = new Map()));
      const tail = `${info.apiGroup}/${info.apiVersion}/${info.subresource}/${scope}`;
      let hit = rest.get(tail);
      if (!hit) rest.set(tail, (hit = this.slowSeries(req)));
      return hit;
    }
    return this.slowSeries(req);
  }

  private slowSeries(req: ApiRequest): Series {
    const labels = labelsOf(req);
    const key = keyOf(labels);
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = { labels, byCode: new Map(), duration: new Histogram(DURATION_BUCKETS), sli: new Histogram(SLI_BUCKETS), sizes: new Histogram(SIZE_BUCKETS) }));
    return s;
  }

  /** A long-running request (a watch) began streaming; the returned function ends it. */
  streamStarted(req: ApiRequest): () => void {
    const labels = labelsOf(req);
    const key = keyOf(labels);
    let e = this.longRunning.get(key);
    if (!e) this.longRunning.set(key, (e = { labels, n: 0 }));
    e.n++;
    const entry = e;
    return () => {
      entry.n--;
    };
  }

  /**
   * A request the server ended in self-defense (kube's RecordRequestTermination: refused by the
   * inflight limits or priority and fairness, timed out), with the status it got: the
   * apiserver_request_terminations_total counter, which the mixin's KubeAPITerminatedRequests
   * alert reads. Rare, so the label key is made per call.
   */
  terminated(req: ApiRequest, code: number): void {
    const labels = labelsOf(req);
    const key = `${keyOf(labels)}\0${code}`;
    let e = this.terminations.get(key);
    if (!e) this.terminations.set(key, (e = { labels, code, n: 0 }));
    e.n++;
  }

  /** A deprecated API was requested (the apiserver_requested_deprecated_apis gauge). */
  deprecatedRequested(group: string, version: string, resource: string, subresource: string, removedRelease: string): void {
    const key = `${group}\0${version}\0${resource}\0${subresource}`;
    if (!this.deprecated.has(key)) this.deprecated.set(key, { group, version, resource, subresource, removed_release: removedRelease });
  }

  /** The apiserver metrics in Prometheus' text format (0.0.4). */
  render(): string {
    const out: string[] = [];
    const metric = (name: string, type: string, help: string, body: () => void) => {
      if (this.disabled.has(name)) return;
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      body();
    };
    const base = (l: Labels, withDryRun: boolean): Record<string, string> => {
      const p: Record<string, string> = { component: 'apiserver', group: l.group, resource: l.resource, scope: l.scope, subresource: l.subresource, verb: l.verb, version: l.version };
      if (withDryRun) p.dry_run = l.dry_run;
      return p;
    };
    metric('apiserver_request_total', 'counter', '[STABLE] Requests answered, by verb, dry run, group, version, resource, subresource, scope, component and status code.', () => {
      for (const s of this.series.values()) for (const [code, n] of s.byCode) out.push(`apiserver_request_total${labelText({ ...base(s.labels, true), code: String(code) })} ${n}`);
    });
    metric('apiserver_request_duration_seconds', 'histogram', '[STABLE] Time from receiving a request to finishing its response, in seconds, by verb, dry run, group, version, resource, subresource, scope and component.', () => {
      for (const s of this.series.values()) histogramText('apiserver_request_duration_seconds', base(s.labels, true), s.duration, out);
    });
    metric('apiserver_request_sli_duration_seconds', 'histogram', '[ALPHA] Time from receiving a request to finishing its response, less the time it waited in priority and fairness queues and for admission webhooks, in seconds, by verb, group, version, resource, subresource, scope and component.', () => {
      for (const s of this.series.values()) histogramText('apiserver_request_sli_duration_seconds', base(s.labels, false), s.sli, out);
    });
    metric('apiserver_response_sizes', 'histogram', '[STABLE] Size of response bodies in bytes, by verb, group, version, resource, subresource, scope and component.', () => {
      for (const s of this.series.values()) if (s.sizes.count > 0) histogramText('apiserver_response_sizes', base(s.labels, false), s.sizes, out);
    });
    if (this.terminations.size > 0)
      metric('apiserver_request_terminations_total', 'counter', '[ALPHA] Requests the server ended in self-defense (rejected by its concurrency limits, timed out), by verb, group, version, resource, subresource, scope, component and code.', () => {
        for (const e of this.terminations.values()) out.push(`apiserver_request_terminations_total${labelText({ ...base(e.labels, false), code: String(e.code) })} ${e.n}`);
      });
    metric('apiserver_current_inflight_requests', 'gauge', '[STABLE] The most requests that ran at once in the last second, by kind (readOnly or mutating).', () => {
      const n = this.gauges.inflight();
      out.push(`apiserver_current_inflight_requests{request_kind="mutating"} ${n.mutating}`, `apiserver_current_inflight_requests{request_kind="readOnly"} ${n.readOnly}`);
    });
    metric('apiserver_longrunning_requests', 'gauge', '[STABLE] Open long-running requests (watches and connections), by verb, group, version, resource, subresource, scope and component.', () => {
      for (const e of this.longRunning.values()) if (e.n > 0) out.push(`apiserver_longrunning_requests${labelText(base(e.labels, false))} ${e.n}`);
    });
    metric('apiserver_requested_deprecated_apis', 'gauge', '[STABLE] Set to 1 for each deprecated API that has been requested, by group, version, resource, subresource and removed_release.', () => {
      for (const d of this.deprecated.values()) out.push(`apiserver_requested_deprecated_apis${labelText(d)} 1`);
    });
    metric('apiserver_storage_objects', 'gauge', '[STABLE] Objects stored at the last check, by resource.', () => {
      for (const [gr, n] of this.gauges.storageObjects().sort((a, b) => (a[0] < b[0] ? -1 : 1))) out.push(`apiserver_storage_objects{resource="${escapeValue(gr)}"} ${n}`);
    });
    const fc = this.gauges.flowControl;
    if (fc) renderFlowControl(fc(), metric, out);
    let text = out.join('\n') + '\n';
    for (const section of this.sections) text += section();
    return text;
  }
}
