// The rest of kube-apiserver's metric families that dashboards and the kubernetes-mixin read,
// beyond the request metrics (request-metrics.ts): authentication and authorization attempts
// and latencies (endpoints/filters/metrics.go), audit events (audit/metrics.go), TLS handshake
// errors, watch events sent (endpoints/metrics), the watch cache's counters (storage/cacher
// metrics), the storage requests' latencies (storage/etcd3/metrics: etcd_request_duration_seconds
// and its totals, kept for whichever backend stores, LMDB or etcd) and the storage's size.
// Names, labels, buckets and stability levels are kube 1.33's; the help texts are ours.
//
// Cost on the hot path: every per-request update is a slot of a fixed array or a counter object
// found once and kept by its user (a watcher keeps its resource's counter); no label string is
// made per request. The text is only made when /metrics is scraped.
//
// Thread ownership: the front thread that records into it (module state per thread: each front
// thread has its own, added up by the metrics endpoint's merge, src/metrics/merge-text.ts).
import { Histogram, escapeValue, histogramText, labelText } from './request-metrics.js';
import { resourcePrefix } from '../storage/etcd/keys.js';

/** kube's ExponentialBuckets(0.001, 2, 15): authentication_duration_seconds and authorization_duration_seconds */
const AUTH_BUCKETS = Array.from({ length: 15 }, (_, i) => 0.001 * 2 ** i);
/** apiserver_watch_events_sizes: ExponentialBuckets(1024, 2, 8), 1 KiB to 128 KiB */
const WATCH_EVENT_BUCKETS = Array.from({ length: 8 }, (_, i) => 1024 * 2 ** i);
/** etcd_request_duration_seconds: the request latency buckets of kube 1.33 */
const STORAGE_BUCKETS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];

export type AuthenticationResult = 'success' | 'failure' | 'error';
const AUTHN_RESULTS: AuthenticationResult[] = ['success', 'failure', 'error'];
export type AuthorizationResult = 'allowed' | 'denied' | 'no-opinion' | 'error';
const AUTHZ_RESULTS: AuthorizationResult[] = ['allowed', 'denied', 'no-opinion', 'error'];

/** The identities kube keeps by name in authenticated_user_requests; others become "email_id" or "other". */
const KNOWN_USERS = new Set(['admin', 'client', 'kube_proxy', 'kubelet', 'system:serviceaccount:kube-system:default']);

/** kube's compressUsername: a bounded label for authenticated_user_requests. */
export function compressUsername(name: string): string {
  if (KNOWN_USERS.has(name)) return name;
  return name.includes('@') ? 'email_id' : 'other';
}

/** A watch resource's counter: kept by each watcher of it, bumped per event sent. */
export class WatchEventCounter {
  n = 0;
  readonly sizes = new Histogram(WATCH_EVENT_BUCKETS);
  constructor(readonly labels: { group: string; version: string; kind: string }) {}
  sent(bytes: number): void {
    this.n++;
    this.sizes.observe(bytes);
  }
}

/** One (operation, type) of the storage requests: etcd_request_duration_seconds and its totals. */
export class StorageRequestSeries {
  readonly duration = new Histogram(STORAGE_BUCKETS);
  errors = 0;
  constructor(
    readonly operation: string,
    readonly type: string,
  ) {}
}

/** What the scrape reads of the watch cache (one entry per cached resource, "configmaps", "deployments.apps"). */
export interface WatchCacheStats {
  resource: string;
  received: number;
  dispatched: number;
  resourceVersion: number;
  capacity: number;
}

export interface ApiserverGauges {
  watchCache?: () => WatchCacheStats[];
  /** the storage's size in bytes, by storage_cluster_id; empty when the backend cannot tell */
  storageSize?: () => Array<[string, number]>;
}

export class ApiserverMetrics {
  private readonly authnCount = new Float64Array(3);
  private readonly authnDuration = AUTHN_RESULTS.map(() => new Histogram(AUTH_BUCKETS));
  private readonly users = new Map<string, number>();
  private readonly authzCount = new Float64Array(4);
  private readonly authzDuration = AUTHZ_RESULTS.map(() => new Histogram(AUTH_BUCKETS));
  private auditEvents = 0;
  private readonly auditLevels = new Map<string, number>();
  private readonly auditErrors = new Map<string, number>();
  private auditRejected = 0;
  private tlsHandshakeErrors = 0;
  private readonly watchEvents = new Map<string, WatchEventCounter>();
  /** type -> operation -> series */
  private readonly storage = new Map<string, Map<string, StorageRequestSeries>>();
  /** LISTs served from the watch cache, by group-resource: count, objects read, objects returned */
  private readonly cacheLists = new Map<string, { prefix: string; n: number; fetched: number; returned: number }>();
  /** LISTs read from storage, by group-resource */
  private readonly storageLists = new Map<string, { n: number; fetched: number; evaluated: number; returned: number }>();
  private gauges: ApiserverGauges = {};

  /** The gauges read on a scrape (set once the caches and the storage exist). */
  setGauges(g: ApiserverGauges): void {
    this.gauges = g;
  }

  /** kube's recordAuthenticationMetrics: the attempt's result, its duration, and on success the user. */
  authentication(result: AuthenticationResult, seconds: number, user?: string): void {
    const i = result === 'success' ? 0 : result === 'failure' ? 1 : 2;
    this.authnCount[i]++;
    this.authnDuration[i].observe(seconds);
    if (user !== undefined) {
      const u = compressUsername(user);
      this.users.set(u, (this.users.get(u) ?? 0) + 1);
    }
  }

  /** kube's recordAuthorizationMetrics. */
  authorization(result: AuthorizationResult, seconds: number): void {
    const i = result === 'allowed' ? 0 : result === 'denied' ? 1 : result === 'no-opinion' ? 2 : 3;
    this.authzCount[i]++;
    this.authzDuration[i].observe(seconds);
  }

  /** Audit events handed to the backends, by level (kube's ObserveEvent and ObservePolicyLevel). */
  auditEvent(level?: string): void {
    this.auditEvents++;
    if (level !== undefined) this.auditLevels.set(level, (this.auditLevels.get(level) ?? 0) + 1);
  }

  /** Events a backend failed to store (kube's HandlePluginError). */
  auditError(plugin: string, n: number): void {
    this.auditErrors.set(plugin, (this.auditErrors.get(plugin) ?? 0) + n);
  }

  /** A request refused because its audit event could not be stored (a blocking-strict backend). */
  auditRequestRejected(): void {
    this.auditRejected++;
  }

  tlsHandshakeError(): void {
    this.tlsHandshakeErrors++;
  }

  /** The counter a watcher of a kind keeps (one per group, version and kind). */
  watchEventCounter(group: string, version: string, kind: string): WatchEventCounter {
    const key = `${group}\0${version}\0${kind}`;
    let c = this.watchEvents.get(key);
    if (!c) this.watchEvents.set(key, (c = new WatchEventCounter({ group, version, kind })));
    return c;
  }

  /** The series of a storage operation on a resource type (found by the type's string, then the operation: no key made per call). */
  storageSeries(operation: string, type: string): StorageRequestSeries {
    let byOp = this.storage.get(type);
    if (!byOp) this.storage.set(type, (byOp = new Map()));
    let s = byOp.get(operation);
    if (!s) byOp.set(operation, (s = new StorageRequestSeries(operation, type)));
    return s;
  }

  /** A LIST served from the watch cache (kube's RecordListCacheMetrics; gr as "deployments.apps"). */
  cacheList(gr: string, fetched: number, returned: number): void {
    let e = this.cacheLists.get(gr);
    if (!e) this.cacheLists.set(gr, (e = { prefix: '/' + resourcePrefixOf(gr), n: 0, fetched: 0, returned: 0 }));
    e.n++;
    e.fetched += fetched;
    e.returned += returned;
  }

  /** A LIST read from storage (kube's RecordStorageListMetrics). */
  storageList(gr: string, fetched: number, evaluated: number, returned: number): void {
    let e = this.storageLists.get(gr);
    if (!e) this.storageLists.set(gr, (e = { n: 0, fetched: 0, evaluated: 0, returned: 0 }));
    e.n++;
    e.fetched += fetched;
    e.evaluated += evaluated;
    e.returned += returned;
  }

  /** The families in Prometheus' text format (a family with no series is left out, as client_golang does for a vector). */
  render(disabled: ReadonlySet<string> = new Set()): string {
    const out: string[] = [];
    const metric = (name: string, type: string, help: string, body: () => void) => {
      if (disabled.has(name)) return;
      const at = out.length;
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      body();
      if (out.length === at + 2) out.length = at;
    };
    metric('authenticated_user_requests', 'counter', '[ALPHA] Requests authenticated, by user name (the well-known identities by name, others as email_id or other).', () => {
      for (const [u, n] of [...this.users].sort()) out.push(`authenticated_user_requests{username="${escapeValue(u)}"} ${n}`);
    });
    metric('authentication_attempts', 'counter', '[ALPHA] Authentication attempts, by result.', () => {
      AUTHN_RESULTS.forEach((r, i) => this.authnCount[i] > 0 && out.push(`authentication_attempts{result="${r}"} ${this.authnCount[i]}`));
    });
    metric('authentication_duration_seconds', 'histogram', '[ALPHA] Time authentication took, in seconds, by result.', () => {
      AUTHN_RESULTS.forEach((r, i) => this.authnDuration[i].count > 0 && histogramText('authentication_duration_seconds', { result: r }, this.authnDuration[i], out));
    });
    metric('authorization_attempts_total', 'counter', "[ALPHA] Authorization attempts, by result ('allowed', 'denied', 'no-opinion' or 'error').", () => {
      AUTHZ_RESULTS.forEach((r, i) => this.authzCount[i] > 0 && out.push(`authorization_attempts_total{result="${r}"} ${this.authzCount[i]}`));
    });
    metric('authorization_duration_seconds', 'histogram', '[ALPHA] Time authorization took, in seconds, by result.', () => {
      AUTHZ_RESULTS.forEach((r, i) => this.authzDuration[i].count > 0 && histogramText('authorization_duration_seconds', { result: r }, this.authzDuration[i], out));
    });
    // (plain counters without labels are always written, as client_golang does)
    metric('apiserver_audit_event_total', 'counter', '[ALPHA] Audit events generated and handed to the audit backends.', () => {
      out.push(`apiserver_audit_event_total ${this.auditEvents}`);
    });
    metric('apiserver_audit_error_total', 'counter', '[ALPHA] Audit events a backend failed to store, by backend.', () => {
      for (const [p, n] of [...this.auditErrors].sort()) out.push(`apiserver_audit_error_total{plugin="${escapeValue(p)}"} ${n}`);
    });
    metric('apiserver_audit_level_total', 'counter', '[ALPHA] Audit events by the level the policy gave them.', () => {
      for (const [l, n] of [...this.auditLevels].sort()) out.push(`apiserver_audit_level_total{level="${escapeValue(l)}"} ${n}`);
    });
    metric('apiserver_audit_requests_rejected_total', 'counter', '[ALPHA] Requests refused because their audit events could not be stored.', () => {
      out.push(`apiserver_audit_requests_rejected_total ${this.auditRejected}`);
    });
    metric('apiserver_tls_handshake_errors_total', 'counter', '[ALPHA] Connections dropped for a failed TLS handshake.', () => {
      out.push(`apiserver_tls_handshake_errors_total ${this.tlsHandshakeErrors}`);
    });
    const watch = [...this.watchEvents.values()].filter((c) => c.n > 0).sort((a, b) => (labelText(a.labels) < labelText(b.labels) ? -1 : 1));
    metric('apiserver_watch_events_total', 'counter', '[ALPHA] Events sent to watch clients, by group, version and kind.', () => {
      for (const c of watch) out.push(`apiserver_watch_events_total${labelText(c.labels)} ${c.n}`);
    });
    metric('apiserver_watch_events_sizes', 'histogram', '[ALPHA] Size of the events sent to watch clients, in bytes, by group, version and kind.', () => {
      for (const c of watch) histogramText('apiserver_watch_events_sizes', c.labels, c.sizes, out);
    });
    const caches = (this.gauges.watchCache?.() ?? []).sort((a, b) => (a.resource < b.resource ? -1 : 1));
    const perCache = (name: string, type: string, help: string, value: (c: WatchCacheStats) => number) =>
      metric(name, type, help, () => {
        for (const c of caches) out.push(`${name}{resource="${escapeValue(c.resource)}"} ${value(c)}`);
      });
    perCache('apiserver_watch_cache_events_received_total', 'counter', '[ALPHA] Events the watch cache received from storage, by resource.', (c) => c.received);
    perCache('apiserver_watch_cache_events_dispatched_total', 'counter', '[ALPHA] Events the watch cache dispatched to its watchers, by resource.', (c) => c.dispatched);
    perCache('apiserver_watch_cache_initializations_total', 'counter', '[ALPHA] Watch cache initializations, by resource.', () => 1);
    perCache('apiserver_watch_cache_resource_version', 'gauge', '[ALPHA] The watch cache\'s current resource version, by resource.', (c) => c.resourceVersion);
    perCache('watch_cache_capacity', 'gauge', '[ALPHA] Events the watch cache keeps for resuming watches, by resource.', (c) => c.capacity);
    const storage = [...this.storage.values()].flatMap((m) => [...m.values()]).sort((a, b) => (a.operation + '\0' + a.type < b.operation + '\0' + b.type ? -1 : 1));
    metric('etcd_request_duration_seconds', 'histogram', '[ALPHA] Time storage requests took, in seconds, by operation and resource type.', () => {
      for (const s of storage) histogramText('etcd_request_duration_seconds', { operation: s.operation, type: s.type }, s.duration, out);
    });
    metric('etcd_requests_total', 'counter', '[ALPHA] Storage requests made, by operation and resource type.', () => {
      for (const s of storage) out.push(`etcd_requests_total${labelText({ operation: s.operation, type: s.type })} ${s.duration.count}`);
    });
    metric('etcd_request_errors_total', 'counter', '[ALPHA] Storage requests that failed, by operation and resource type.', () => {
      for (const s of storage) if (s.errors > 0) out.push(`etcd_request_errors_total${labelText({ operation: s.operation, type: s.type })} ${s.errors}`);
    });
    const cacheLists = [...this.cacheLists.values()].sort((a, b) => (a.prefix < b.prefix ? -1 : 1));
    const cl = (name: string, help: string, v: (e: (typeof cacheLists)[number]) => number, index: boolean) =>
      metric(name, 'counter', help, () => {
        for (const e of cacheLists) out.push(`${name}${labelText(index ? { index: '', resource_prefix: e.prefix } : { resource_prefix: e.prefix })} ${v(e)}`);
      });
    cl('apiserver_cache_list_total', '[ALPHA] LIST requests served from the watch cache, by resource prefix and index.', (e) => e.n, true);
    cl('apiserver_cache_list_fetched_objects_total', '[ALPHA] Objects the watch cache read to serve LIST requests, by resource prefix and index.', (e) => e.fetched, true);
    cl('apiserver_cache_list_returned_objects_total', '[ALPHA] Objects LIST requests served from the watch cache returned, by resource prefix.', (e) => e.returned, false);
    const storageLists = [...this.storageLists].sort((a, b) => (a[0] < b[0] ? -1 : 1));
    const sl = (name: string, help: string, v: (e: { n: number; fetched: number; evaluated: number; returned: number }) => number) =>
      metric(name, 'counter', help, () => {
        for (const [gr, e] of storageLists) out.push(`${name}{resource="${escapeValue(gr)}"} ${v(e)}`);
      });
    sl('apiserver_storage_list_total', '[ALPHA] LIST requests read from storage, by resource.', (e) => e.n);
    sl('apiserver_storage_list_fetched_objects_total', '[ALPHA] Objects read from storage to serve LIST requests, by resource.', (e) => e.fetched);
    sl('apiserver_storage_list_evaluated_objects_total', '[ALPHA] Objects tested against the selectors of LIST requests read from storage, by resource.', (e) => e.evaluated);
    sl('apiserver_storage_list_returned_objects_total', '[ALPHA] Objects LIST requests read from storage returned, by resource.', (e) => e.returned);
    metric('apiserver_storage_size_bytes', 'gauge', '[STABLE] Size of the storage\'s database files on disk, in bytes, by storage cluster.', () => {
      for (const [id, n] of this.gauges.storageSize?.() ?? []) out.push(`apiserver_storage_size_bytes{storage_cluster_id="${escapeValue(id)}"} ${n}`);
    });
    return out.length ? out.join('\n') + '\n' : '';
  }
}

/** kube's resource prefix of a cache key ("deployments.apps" -> "deployments", "widgets.example.com" -> "example.com/widgets"). */
function resourcePrefixOf(gr: string): string {
  const dot = gr.indexOf('.');
  return dot < 0 ? resourcePrefix('', gr) : resourcePrefix(gr.slice(dot + 1), gr.slice(0, dot));
}

/** This thread's metrics. */
export const apiserverMetrics = new ApiserverMetrics();
