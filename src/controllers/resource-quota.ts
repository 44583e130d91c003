// The resource quota controller (kube-controller-manager's, in process): every
// ResourceQuota's status holds hard (its spec.hard) and used (the namespace's usage of
// those resources), recalculated when the quota changes and when objects it counts come,
// change or go. The admission check itself (src/admission/resource-quota.ts) computes
// usage afresh and does not wait for this.
//
// Thread ownership: the front thread, driven by the cache layer's committed batches (Cacher.observe);
// recalculations of one namespace are batched to one per turn of the event loop.
import type { Cacher } from '../storage/cacher.js';
import type { Targets } from '../api/targets.js';
import { StatusError } from '../errors.js';
import { entryObject, type ResourceCache, type WatchEvent } from '../../workers/watch/watch-cache.js';
import { type ResourceTarget, type Store } from '../registry/store.js';
import type { ObjectSource } from '../admission/plugin.js';
import { namespaceUsage, sourcesOf } from '../admission/resource-quota.js';
import { canonicalQuantity, parseQuantity } from '../registry/quantity.js';
import { deepEqual } from '../registry/managed-fields.js';

export class ResourceQuotaController {
  private rqT: ResourceTarget;
  private dirty = new Set<string>();
  private scheduled = false;
  private stopped = false;

  constructor(
    private store: Store,
    private cacher: Cacher,
    targets: Targets,
    private objects: ObjectSource,
  ) {
    this.rqT = targets.resolve('', 'v1', 'resourcequotas')!;
  }

  start(): void {
    this.cacher.observe((cache, evs) => this.onEvents(cache, evs));
    for (const e of this.store.cacheOf(this.rqT).items.values()) this.mark(e.ns);
  }

  stop(): void {
    this.stopped = true;
  }

  private onEvents(cache: ResourceCache, evs: WatchEvent[]): void {
    const quotas = this.store.cacheOf(this.rqT);
    if (quotas.items.size === 0) return;
    if (cache.gr === this.rqT.gr) {
      for (const ev of evs) if (ev.type !== 'DELETED') this.mark(ev.entry.ns);
      return;
    }
    for (const ev of evs) {
      const ns = ev.entry.ns;
      if (!ns) continue;
      const inNs = quotas.list(ns);
      if (inNs.some((q) => Object.keys(entryObject(q)?.spec?.hard ?? {}).some((k) => sourcesOf(k).includes(cache.gr)))) this.mark(ns);
    }
  }

  private mark(ns: string): void {
    this.dirty.add(ns);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const todo = [...this.dirty];
      this.dirty.clear();
      for (const ns of todo) void this.sync(ns);
    });
  }

  private async sync(ns: string): Promise<void> {
    if (this.stopped) return;
    for (const e of this.store.cacheOf(this.rqT).list(ns)) {
      const rq = entryObject(e);
      const hard: Record<string, unknown> = rq?.spec?.hard && typeof rq.spec.hard === 'object' ? rq.spec.hard : {};
      const canon = (v: unknown) => {
        const q = parseQuantity(v);
        return q ? canonicalQuantity(q) : String(v);
      };
      const status = {
        hard: Object.fromEntries(Object.entries(hard).map(([k, v]) => [k, canon(v)])),
        used: Object.fromEntries(Object.entries(namespaceUsage(this.objects, ns, hard)).map(([k, q]) => [k, canonicalQuantity(q)])),
      };
      if (deepEqual(rq.status ?? {}, status)) continue;
      try {
        await this.store.storageUpdate(this.rqT, ns, e.name, false, (o) => {
          o.status = status;
        });
      } catch (err) {
        if (!(err instanceof StatusError)) console.warn(`W resourcequota controller: ${ns}/${e.name}: ${err}`);
      }
    }
  }
}
