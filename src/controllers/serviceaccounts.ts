// The service-account controller (kube-controller-manager's, in process): every active
// namespace has a ServiceAccount named `default`. It is created when a namespace appears
// (the initial ones included) and again when it is deleted while its namespace lives on.
//
// Thread ownership: the front thread, driven by the coordinator's committed batches as the
// garbage collector is. Creates go through the generic store, so watchers see them.
import type { Coordinator } from '../coordinator/coordinator.js';
import type { Targets } from '../api/targets.js';
import { StatusError } from '../errors.js';
import { entryObject, type ResourceCache, type WatchEvent } from '../../workers/watch/watch-cache.js';
import { objectKey, type ResourceTarget, type Store } from '../registry/store.js';

const DEFAULT_NAME = 'default';

export class ServiceAccountsController {
  private nsT: ResourceTarget;
  private saT: ResourceTarget;
  private pending = new Set<string>();
  private stopped = false;

  constructor(
    private store: Store,
    private coord: Coordinator,
    targets: Targets,
  ) {
    this.nsT = targets.resolve('', 'v1', 'namespaces')!;
    this.saT = targets.resolve('', 'v1', 'serviceaccounts')!;
  }

  /** Ensures every existing namespace has its account, then follows changes. */
  async start(): Promise<void> {
    this.coord.observe((cache, evs) => this.onEvents(cache, evs));
    await Promise.all([...this.store.cacheOf(this.nsT).items.values()].map((e) => this.ensure(e.name)));
  }

  stop(): void {
    this.stopped = true;
  }

  private onEvents(cache: ResourceCache, evs: WatchEvent[]): void {
    if (cache.gr === this.nsT.gr) {
      for (const ev of evs) if (ev.type === 'ADDED') void this.ensure(ev.entry.name);
    } else if (cache.gr === this.saT.gr) {
      for (const ev of evs) if (ev.type === 'DELETED' && ev.entry.name === DEFAULT_NAME) void this.ensure(ev.entry.ns);
    }
  }

  private async ensure(ns: string): Promise<void> {
    if (this.stopped || this.pending.has(ns)) return;
    const nsEntry = this.store.cacheOf(this.nsT).items.get(objectKey('', ns));
    if (!nsEntry || entryObject(nsEntry)?.metadata?.deletionTimestamp) return;
    if (this.store.cacheOf(this.saT).items.has(objectKey(ns, DEFAULT_NAME))) return;
    this.pending.add(ns);
    try {
      await this.store.create(this.saT, ns, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: DEFAULT_NAME, namespace: ns } }, { dryRun: false });
    } catch (e) {
      // Already there (a race with a client), or the namespace went meanwhile: nothing to do.
      if (!(e instanceof StatusError)) console.warn(`W serviceaccounts controller: ${ns}/${DEFAULT_NAME}: ${e}`);
    } finally {
      this.pending.delete(ns);
    }
  }
}
