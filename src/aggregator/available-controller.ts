// The Available condition of every APIService: kube-aggregator's status controllers. A local
// APIService (no Service) is always available (local/local_available_controller.go); one with
// a Service is checked as remote/remote_available_controller.go checks it: the Service exists,
// a ClusterIP Service has the port and a ready endpoint on it (EndpointSlices), and the
// backend answers GET /apis/<group>/<version> (five tries at once, any success passes, 5 s
// each, as system:kube-aggregator in system:masters, TLS unverified). Checked when the
// APIService, its Service or its EndpointSlices change, after a failure again soon, and all
// every 30 s (the resync that finds a backend gone quiet). Status is written only when it changes.
//
// Thread ownership: the main thread (it writes status through the store); other front
// threads see the condition through their caches.
import type { Cacher } from '../storage/cacher.js';
import type { ResourceTarget, Store } from '../registry/store.js';
import { StatusError } from '../errors.js';
import { entryObject, type WatchEvent } from '../../workers/watch/watch-cache.js';
import { APISERVICES_GR, ENDPOINTSLICES_GR, SERVICES_GR, conditionOf, viewOf, withCondition, type APIServiceCondition, type APIServiceView } from './apiservice.js';
import { hasAvailableEndpoint, type ObjectReader } from './service-resolver.js';
import { dialErrorText, type BackendClient } from './backend-client.js';
import type { ServiceResolver } from './service-resolver.js';
import { ResyncQueue } from './resync-queue.js';

const ATTEMPTS = 5;
const CHECK_TIMEOUT_MS = 5000;

export class AvailableConditionController {
  private queue: ResyncQueue;
  private unobserve?: () => void;
  /** "namespace/name" of a Service -> the APIServices that use it */
  private byService = new Map<string, string[]>();
  /** aggregator_unavailable_apiservice_total: "name\0reason" -> times marked unavailable */
  private unavailableTotal = new Map<string, number>();

  constructor(
    private store: Store,
    private cacher: Cacher,
    private target: ResourceTarget,
    private objects: ObjectReader,
    private resolver: ServiceResolver,
    private client: BackendClient,
    resyncMs = 30_000,
  ) {
    // (failures come back quickly at first, as kube's 5 ms..30 s rate limiter has them)
    this.queue = new ResyncQueue((name) => this.sync(name), { periodMs: resyncMs, keys: () => this.names(), minBackoffMs: 50, maxBackoffMs: Math.min(30_000, resyncMs) });
  }

  private names(): string[] {
    return [...this.cacher.cache(APISERVICES_GR).items.values()].map((e) => entryObject(e)?.metadata?.name).filter((n): n is string => typeof n === 'string');
  }

  start(): void {
    this.rebuildIndex();
    this.unobserve = this.cacher.observe((cache, events) => {
      if (cache.gr === APISERVICES_GR) {
        this.rebuildIndex();
        for (const ev of events) {
          const name = eventObject(ev)?.metadata?.name;
          if (name) this.queue.add(name);
        }
      } else if (cache.gr === SERVICES_GR || cache.gr === ENDPOINTSLICES_GR) {
        for (const ev of events) {
          const o = eventObject(ev);
          const ns = o?.metadata?.namespace ?? '';
          const svc = cache.gr === SERVICES_GR ? o?.metadata?.name : o?.metadata?.labels?.['kubernetes.io/service-name'];
          for (const name of this.byService.get(`${ns}/${svc}`) ?? []) this.queue.add(name);
        }
      }
    });
    this.queue.start();
  }

  stop(): void {
    this.unobserve?.();
    this.queue.stop();
  }

  private rebuildIndex(): void {
    const idx = new Map<string, string[]>();
    for (const e of this.cacher.cache(APISERVICES_GR).items.values()) {
      const v = viewOf(entryObject(e));
      if (!v?.service) continue;
      const k = `${v.service.namespace}/${v.service.name}`;
      idx.set(k, [...(idx.get(k) ?? []), v.name]);
    }
    this.byService = idx;
  }

  private async sync(name: string): Promise<boolean> {
    const o = this.objects.get(APISERVICES_GR, '', name);
    if (!o || o.metadata?.deletionTimestamp) return true;
    const v = viewOf(o);
    if (!v) return true;
    const { condition, ok } = v.service ? await this.check(v) : { condition: local(), ok: true };
    await this.write(name, condition);
    return ok;
  }

  /** The remote controller's checks, in its order; ok is false when a retry should come soon. */
  private async check(v: APIServiceView): Promise<{ condition: APIServiceCondition; ok: boolean }> {
    const { namespace, name, port } = v.service!;
    const fail = (reason: string, message: string, status: APIServiceCondition['status'] = 'False') => ({ condition: { type: 'Available', status, lastTransitionTime: now(), reason, message }, ok: true });
    const svc = this.objects.get(SERVICES_GR, namespace, name);
    if (!svc) return fail('ServiceNotFound', `service/${name} in ${JSON.stringify(namespace)} is not present`);
    if ((svc.spec?.type ?? 'ClusterIP') === 'ClusterIP') {
      const sp = (svc.spec?.ports ?? []).find((p: any) => p?.port === port);
      if (!sp) return fail('ServicePortError', `service/${name} in ${JSON.stringify(namespace)} is not listening on port ${port}`);
      const portName = sp.name ?? '';
      const slices = this.objects.list(ENDPOINTSLICES_GR, namespace).filter((s) => s?.metadata?.labels?.['kubernetes.io/service-name'] === name);
      if (slices.length === 0) return fail('EndpointsNotFound', `cannot find endpointslices for service/${name} in ${JSON.stringify(namespace)}`);
      if (!hasAvailableEndpoint(slices, name, portName)) return fail('MissingEndpoints', `endpointslices for service/${name} in ${JSON.stringify(namespace)} have no addresses with port name ${JSON.stringify(portName)}`);
    }
    const path = `/apis/${v.group}/${v.version}`;
    const attempt = async (): Promise<string | null> => {
      let at;
      try {
        at = this.resolver.resolve(namespace, name, port);
      } catch (e) {
        return (e as Error).message;
      }
      const url = `https://${at.host.includes(':') ? `[${at.host}]` : at.host}:${at.port}${path}`;
      try {
        const r = await this.client.get(v, at, path, { 'x-remote-user': 'system:kube-aggregator', 'x-remote-group': ['system:masters'] }, { insecure: true, timeoutMs: CHECK_TIMEOUT_MS, maxBytes: 64 << 20 });
        // (the 200s and 300s pass)
        if (r.status < 200 || r.status >= 300) return `failing or missing response from ${url}: bad status from ${url}: ${r.status}`;
        return null;
      } catch (e) {
        return `failing or missing response from ${url}: Get "${url}": ${dialErrorText(e, at)}`;
      }
    };
    const results = await Promise.all(Array.from({ length: ATTEMPTS }, attempt));
    if (results.some((r) => r === null)) return { condition: { type: 'Available', status: 'True', lastTransitionTime: now(), reason: 'Passed', message: 'all checks passed' }, ok: true };
    return { condition: { type: 'Available', status: 'False', lastTransitionTime: now(), reason: 'FailedDiscoveryCheck', message: results[results.length - 1]! }, ok: false };
  }

  /** kube's updateAPIServiceStatus: a write only when the condition changed. */
  private async write(name: string, c: APIServiceCondition): Promise<void> {
    const cur = this.objects.get(APISERVICES_GR, '', name);
    const have = conditionOf(cur, 'Available');
    if (have && have.status === c.status && have.reason === c.reason && have.message === c.message) return;
    try {
      await this.store.guaranteedUpdate(this.target, '', name, { dryRun: false, subresource: 'status' }, (o: any) => {
        delete o.metadata.resourceVersion;
        o.status = { ...(o.status ?? {}), conditions: withCondition(o, c) };
        return o;
      });
      if (have?.status !== c.status) console.warn(`I changing APIService availability: ${name} ${have?.status ?? 'Unknown'} -> ${c.status} (${c.reason})`);
      if (c.status !== 'True') {
        const k = `${name}\0${c.reason}`;
        this.unavailableTotal.set(k, (this.unavailableTotal.get(k) ?? 0) + 1);
      }
    } catch (e) {
      if (!(e instanceof StatusError && (e.code === 404 || e.code === 409))) throw e;
    }
  }

  /**
   * kube's availability metrics (controllers/status/metrics): a gauge per APIService, 1 while
   * it is not Available, and a counter of the times each was marked unavailable, by reason.
   */
  metricsText(): string {
    const esc = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
    // (a family without samples is left out, as Prometheus' Go client leaves it)
    const lines: string[] = [];
    const objs = [...this.cacher.cache(APISERVICES_GR).items.values()].map((e) => entryObject(e)).sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
    if (objs.length) lines.push('# HELP aggregator_unavailable_apiservice [STABLE] Gauge of APIServices which are marked as unavailable broken down by APIService name.', '# TYPE aggregator_unavailable_apiservice gauge');
    for (const o of objs) lines.push(`aggregator_unavailable_apiservice{name="${esc(o.metadata.name)}"} ${conditionOf(o, 'Available')?.status === 'True' ? 0 : 1}`);
    if (this.unavailableTotal.size) lines.push('# HELP aggregator_unavailable_apiservice_total [STABLE] Counter of APIServices which are marked as unavailable broken down by APIService name and reason.', '# TYPE aggregator_unavailable_apiservice_total counter');
    for (const [k, n] of [...this.unavailableTotal].sort()) {
      const [name, reason] = k.split('\0');
      lines.push(`aggregator_unavailable_apiservice_total{name="${esc(name)}",reason="${esc(reason)}"} ${n}`);
    }
    return lines.length ? lines.join('\n') + '\n' : '';
  }
}

function local(): APIServiceCondition {
  return { type: 'Available', status: 'True', lastTransitionTime: now(), reason: 'Local', message: 'Local APIServices are always available' };
}

function now(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

function eventObject(ev: WatchEvent): any {
  return entryObject(ev.entry);
}
