// API aggregation on one front thread: kube-aggregator's APIServiceRegistrationController and
// its handlers. It follows the stored APIServices (the thread's cache) and says which
// group-versions another server serves (an APIService with a Service), proxies their requests
// (proxy.ts), and gives the router what discovery and OpenAPI gain from them: the groups in
// /apis, their versions in aggregated discovery (discovery-manager.ts), /apis/<group>, and the
// backends' OpenAPI (openapi-downloader.ts). `generation` moves whenever any of that changes,
// so the router rebuilds its documents then, as it does when the catalog changes.
//
// Thread ownership: one per front thread; its maps are replaced (never mutated) on the
// thread's event loop, from the cache observer.
import type { OutgoingHttpHeaders } from 'node:http';
import type { Cacher } from '../storage/cacher.js';
import type { ApiRequest, ResponseSink } from '../http/types.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import { APISERVICES_GR, groupBefore, localGroupPriority, sortedByGroupAndVersion, viewOf, type AggregatedGroup, type APIServiceView } from './apiservice.js';
import { BackendClient, type ProxyClientCertSource } from './backend-client.js';
import { ServiceResolver, type ObjectReader } from './service-resolver.js';
import { proxyToService } from './proxy.js';
import { DiscoveryManager, DOCUMENT_LIMIT_BYTES } from './discovery-manager.js';
import { OpenApiDownloader, type AggregatedOpenApi } from './openapi-downloader.js';

export interface AggregatorOptions {
  /** --enable-aggregator-routing */
  enableAggregatorRouting: boolean;
  proxyClientCert?: ProxyClientCertSource;
  /** how often discovery and OpenAPI are fetched again (kube: each minute) */
  refreshMs?: number;
}

export class Aggregator {
  /** moves when the aggregated groups, their discovery or their OpenAPI change */
  generation = 0;
  readonly client: BackendClient;
  readonly resolver: ServiceResolver;
  readonly discovery: DiscoveryManager;
  readonly openapi: OpenApiDownloader;
  /** "group/version" -> the APIService serving it elsewhere */
  private remote = new Map<string, APIServiceView>();
  private groups: AggregatedGroup[] = [];
  private unobserve?: () => void;

  constructor(
    private cacher: Cacher,
    objects: ObjectReader,
    opts: AggregatorOptions,
  ) {
    this.client = new BackendClient(opts.proxyClientCert);
    this.resolver = new ServiceResolver(objects, opts.enableAggregatorRouting);
    const fetch = (s: APIServiceView, path: string, headers: OutgoingHttpHeaders) => {
      const at = this.resolver.resolve(s.service!.namespace, s.service!.name, s.service!.port);
      return this.client.get(s, at, path, headers, { timeoutMs: 5000, maxBytes: DOCUMENT_LIMIT_BYTES });
    };
    const changed = () => this.generation++;
    this.discovery = new DiscoveryManager(fetch, changed, opts.refreshMs);
    this.openapi = new OpenApiDownloader(fetch, changed, opts.refreshMs);
  }

  start(): void {
    this.reload();
    this.unobserve = this.cacher.observe((cache) => {
      if (cache.gr === APISERVICES_GR) this.reload();
    });
    this.discovery.start();
    this.openapi.start();
  }

  stop(): void {
    this.unobserve?.();
    this.discovery.stop();
    this.openapi.stop();
    this.client.close();
  }

  /** kube's APIServiceRegistrationController: the handlers follow the stored APIServices. */
  private reload(): void {
    const views: APIServiceView[] = [];
    for (const e of this.cacher.cache(APISERVICES_GR).items.values()) {
      const o = entryObject(e);
      if (o?.metadata?.deletionTimestamp) continue;
      const v = viewOf(o);
      // (a Service for the legacy group, "v1.", is not served: /api stays this server's)
      if (v?.service && v.group) views.push(v);
    }
    const remote = new Map<string, APIServiceView>();
    for (const v of views) remote.set(`${v.group}/${v.version}`, v);
    const before = JSON.stringify(this.groups.map((g) => [g.name, g.priority, g.services.map((s) => [s.name, s.versionPriority])]));
    this.remote = remote;
    this.groups = sortedByGroupAndVersion(views);
    if (JSON.stringify(this.groups.map((g) => [g.name, g.priority, g.services.map((s) => [s.name, s.versionPriority])])) !== before) this.generation++;
    this.client.retain(new Set(views.map((v) => v.name)));
    this.discovery.update(views);
    this.openapi.update(views);
  }

  /** The APIService that serves this group-version elsewhere, if one does. */
  proxyFor(group: string, version: string): APIServiceView | undefined {
    return this.remote.size === 0 ? undefined : this.remote.get(`${group}/${version}`);
  }

  /** The APIService of a discovery path under /apis/<group>/<version>, if another server serves it. */
  proxyForPath(path: string): APIServiceView | undefined {
    if (this.remote.size === 0) return undefined;
    const m = /^\/apis\/([^/]+)\/([^/]+)/.exec(path);
    return m ? this.remote.get(`${m[1]}/${m[2]}`) : undefined;
  }

  serve(req: ApiRequest, res: ResponseSink, s: APIServiceView): void | Promise<void> {
    return proxyToService(req, res, s, this.resolver, this.client);
  }

  get hasGroups(): boolean {
    return this.groups.length > 0;
  }

  get openApi(): AggregatedOpenApi | undefined {
    return this.hasGroups ? this.openapi : undefined;
  }

  /** /apis/<group> of an aggregated group no local API serves (kube's apiGroupHandler). */
  groupDocs(localGroups: Set<string>): Map<string, string> {
    const out = new Map<string, string>();
    for (const g of this.groups) {
      if (localGroups.has(g.name)) continue;
      out.set(`/apis/${g.name}`, JSON.stringify({ kind: 'APIGroup', apiVersion: 'v1', ...legacyGroup(g) }));
    }
    return out;
  }

  /** The legacy /apis document (APIGroupList) with the aggregated groups in their places. */
  mergeGroupList(json: Buffer): Buffer {
    const doc = JSON.parse(json.toString('utf8'));
    doc.groups = this.merge(doc.groups ?? [], (g) => g.name, legacyGroup, (into, g) => {
      for (const s of g.services) {
        const gv = `${s.group}/${s.version}`;
        if (!into.versions.some((v: any) => v.groupVersion === gv)) into.versions.push({ groupVersion: gv, version: s.version });
      }
    });
    return Buffer.from(JSON.stringify(doc));
  }

  /** The aggregated /apis document (APIGroupDiscoveryList, v2 or v2beta1) with the aggregated versions. */
  mergeAggregated(json: Buffer): Buffer {
    const doc = JSON.parse(json.toString('utf8'));
    const versionsOf = (g: AggregatedGroup) => g.services.map((s) => this.discovery.entry(s.name) ?? { version: s.version, freshness: 'Stale' });
    doc.items = this.merge(
      doc.items ?? [],
      (i: any) => i?.metadata?.name ?? '',
      (g) => ({ metadata: { name: g.name, creationTimestamp: null }, versions: versionsOf(g) }),
      (into, g) => {
        for (const v of versionsOf(g)) if (!into.versions.some((x: any) => x.version === v.version)) into.versions.push(v);
      },
    );
    return Buffer.from(JSON.stringify(doc));
  }

  /**
   * Places the aggregated groups among the local ones (in the catalog's order, which is
   * kube's priority order): each goes before the first local group it outranks; a group
   * both serve keeps its local place and gains the aggregated versions.
   */
  private merge<T>(local: T[], nameOf: (t: T) => string, make: (g: AggregatedGroup) => T, extend: (into: any, g: AggregatedGroup) => void): T[] {
    const localNames = new Set(local.map(nameOf));
    const pending = this.groups.filter((g) => !localNames.has(g.name));
    const shared = new Map(this.groups.filter((g) => localNames.has(g.name)).map((g) => [g.name, g]));
    const out: T[] = [];
    for (const t of local) {
      const name = nameOf(t);
      const p = localGroupPriority(name);
      while (pending.length && groupBefore(pending[0].name, pending[0].priority, name, p)) out.push(make(pending.shift()!));
      const same = shared.get(name);
      if (same) extend(t, same);
      out.push(t);
    }
    for (const g of pending) out.push(make(g));
    return out;
  }
}

function legacyGroup(g: AggregatedGroup) {
  const versions = g.services.map((s) => ({ groupVersion: `${s.group}/${s.version}`, version: s.version }));
  return { name: g.name, versions, preferredVersion: versions[0] };
}
