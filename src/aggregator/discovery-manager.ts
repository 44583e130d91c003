// The aggregated servers' part of aggregated discovery: kube-aggregator's discoveryManager
// (apiserver/handler_discovery.go). For each APIService with a Service, the backend's /apis
// is fetched in the aggregated form (v2, else v2beta1), with the last ETag; a backend that
// answers in another form is asked for its legacy /apis/<group>/<version> instead, converted.
// Results are cached per Service, so APIServices sharing one backend fetch once per round;
// every APIService is fetched again each minute and whenever it changes (its availability
// included). A failed fetch keeps what was known, marked Stale, or an empty version.
//
// Thread ownership: one per front thread, fed by that thread's Aggregator.
import type { APIServiceView } from './apiservice.js';
import { ResyncQueue } from './resync-queue.js';

const ACCEPT_V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const ACCEPT_V2BETA1 = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';
const MAX_DOC_BYTES = 32 << 20;

/** How the manager reaches an APIService's backend (Aggregator.fetch). */
export type BackendFetch = (s: APIServiceView, path: string, headers: Record<string, string | string[]>) => Promise<{ status: number; headers: Record<string, any>; body: Buffer }>;

interface CachedResult {
  /** "group/version" -> the APIVersionDiscovery the backend gave */
  discovery: Map<string, any>;
  etag: string;
  /** when the fetch behind it started */
  at: number;
}

/** kube's ConvertGroupVersionIntoToDiscovery: a legacy APIResourceList's resources in the aggregated form. */
export function convertResourceList(resources: any[]): any[] {
  const out: any[] = [];
  const parents = new Map<string, any>();
  for (const r of resources) {
    if (typeof r?.name !== 'string' || r.name.includes('/')) continue;
    const e: any = {
      resource: r.name,
      responseKind: { group: r.group ?? '', version: r.version ?? '', kind: r.kind ?? '' },
      scope: r.namespaced ? 'Namespaced' : 'Cluster',
      singularResource: r.singularName ?? '',
      verbs: r.verbs ?? [],
    };
    if (r.shortNames?.length) e.shortNames = r.shortNames;
    if (r.categories?.length) e.categories = r.categories;
    parents.set(r.name, e);
    out.push(e);
  }
  for (const r of resources) {
    if (typeof r?.name !== 'string' || !r.name.includes('/')) continue;
    const [parent, sub] = r.name.split('/', 2);
    const p = parents.get(parent);
    if (!p) continue;
    (p.subresources ??= []).push({ subresource: sub, responseKind: { group: r.group ?? '', version: r.version ?? '', kind: r.kind ?? '' }, verbs: r.verbs ?? [] });
  }
  return out;
}

function isAggregatedType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const params = contentType.split(';').map((p) => p.trim());
  return params[0] === 'application/json' && params.includes('g=apidiscovery.k8s.io') && params.includes('as=APIGroupDiscoveryList') && (params.includes('v=v2') || params.includes('v=v2beta1'));
}

export class DiscoveryManager {
  private services = new Map<string, { view: APIServiceView; dirtyAt: number }>();
  private cached = new Map<string, CachedResult>();
  /** APIService name -> its version entry in the merged document (JSON text, with freshness) */
  private entries = new Map<string, string>();
  private queue: ResyncQueue;

  constructor(
    private fetch: BackendFetch,
    /** told when an entry of the merged document changed */
    private changed: () => void,
    refreshMs = 60_000,
  ) {
    this.queue = new ResyncQueue((name) => this.syncAPIService(name), { periodMs: refreshMs, keys: () => this.markAllDirty(), minBackoffMs: 200, maxBackoffMs: refreshMs });
  }

  start(): void {
    this.queue.start();
  }

  stop(): void {
    this.queue.stop();
  }

  private markAllDirty(): string[] {
    const now = Date.now();
    for (const s of this.services.values()) s.dirtyAt = now;
    return [...this.services.keys()];
  }

  /** The APIServices with a Service now: new or changed ones are fetched again, gone ones leave. */
  update(views: APIServiceView[]): void {
    const seen = new Set<string>();
    for (const v of views) {
      seen.add(v.name);
      const cur = this.services.get(v.name);
      if (cur && cur.view.resourceVersion === v.resourceVersion) continue;
      this.services.set(v.name, { view: v, dirtyAt: Date.now() });
      this.queue.add(v.name);
    }
    let removed = false;
    for (const name of [...this.services.keys()]) {
      if (seen.has(name)) continue;
      this.services.delete(name);
      removed = this.entries.delete(name) || removed;
    }
    const used = new Set([...this.services.values()].map((s) => serviceKey(s.view)));
    for (const k of [...this.cached.keys()]) if (!used.has(k)) this.cached.delete(k);
    if (removed) this.changed();
  }

  /** The version entry (APIVersionDiscovery) of an APIService, parsed; undefined before its first sync. */
  entry(name: string): any | undefined {
    const e = this.entries.get(name);
    return e === undefined ? undefined : JSON.parse(e);
  }

  private async syncAPIService(name: string): Promise<boolean> {
    const info = this.services.get(name);
    if (!info) return true;
    const s = info.view;
    const gv = `${s.group}/${s.version}`;
    let result: CachedResult | undefined;
    let ok = true;
    try {
      result = await this.fetchFresh(s, info.dirtyAt);
    } catch (e) {
      ok = false;
      result = this.cached.get(serviceKey(s));
    }
    const entry = { ...(result?.discovery.get(gv) ?? { version: s.version }), version: s.version, freshness: ok ? 'Current' : 'Stale' };
    const text = JSON.stringify(entry);
    if (this.services.get(name) === info && this.entries.get(name) !== text) {
      this.entries.set(name, text);
      this.changed();
    }
    return ok;
  }

  /** kube's fetchFreshDiscoveryForService. */
  private async fetchFresh(s: APIServiceView, dirtyAt: number): Promise<CachedResult> {
    const key = serviceKey(s);
    const cached = this.cached.get(key);
    if (cached && cached.at > dirtyAt) return cached;
    // (the proxy would answer 503 for an unavailable APIService)
    if (!s.available) throw new Error(`service ${key} returned non-success response code: 503`);
    const at = Date.now();
    const headers: Record<string, string | string[]> = { accept: `${ACCEPT_V2},${ACCEPT_V2BETA1}`, 'x-remote-user': 'system:kube-aggregator', 'x-remote-group': ['system:masters'] };
    if (cached?.etag) headers['if-none-match'] = cached.etag;
    const r = await this.fetch(s, '/apis', headers);
    if (r.status === 304 && cached) {
      const fresh = { ...cached, at };
      this.cached.set(key, fresh);
      return fresh;
    }
    if (r.status === 503) throw new Error(`service ${key} returned non-success response code: 503`);
    if (r.status === 200 && isAggregatedType(r.headers['content-type'])) {
      const parsed = JSON.parse(r.body.toString('utf8'));
      const discovery = new Map<string, any>();
      for (const g of parsed?.items ?? []) {
        for (const v of g?.versions ?? []) discovery.set(`${g?.metadata?.name ?? ''}/${v?.version}`, v);
      }
      const fresh = { discovery, etag: String(r.headers['etag'] ?? ''), at };
      this.cached.set(key, fresh);
      return fresh;
    }
    // Not served in the aggregated form: the legacy document of this one group-version
    // (not cached per Service: another APIService of the same backend needs its own).
    const path = `/apis/${s.group}/${s.version}`;
    const legacy = await this.fetch(s, path, { accept: 'application/json', 'x-remote-user': 'system:kube-aggregator' });
    if (legacy.status !== 200) throw new Error(`failed to download legacy discovery for ${path}: ResponseCode: ${legacy.status}`);
    const list = JSON.parse(legacy.body.toString('utf8'));
    return { discovery: new Map([[`${s.group}/${s.version}`, { version: s.version, resources: convertResourceList(list?.resources ?? []) }]]), etag: '', at };
  }
}

function serviceKey(s: APIServiceView): string {
  return `${s.service!.namespace}/${s.service!.name}:${s.service!.port}`;
}

/** The largest discovery or OpenAPI document read from a backend. */
export const DOCUMENT_LIMIT_BYTES = MAX_DOC_BYTES;
