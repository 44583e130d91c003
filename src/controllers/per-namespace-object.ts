// A controller that keeps one named object in every live namespace (the default
// ServiceAccount, the kube-root-ca.crt ConfigMap): it syncs every namespace at start,
// each namespace that appears, and the namespace of an event on its object that needs a
// resync. A subclass says which object and how to make it right (template method).
//
// Thread ownership: the front thread, driven by the cache layer's committed batches (Cacher.observe).
// Writes go through the generic store, so watchers see them.
import type { Cacher } from '../storage/cacher.js';
import type { Targets } from '../api/targets.js';
import { StatusError } from '../errors.js';
import { entryObject, type CacheEntry, type ResourceCache, type WatchEvent } from '../../workers/watch/watch-cache.js';
import { objectKey, type ResourceTarget, type Store } from '../registry/store.js';

export abstract class PerNamespaceObjectController {
  protected nsT: ResourceTarget;
  protected objT: ResourceTarget;
  private pending = new Set<string>();
  private stopped = false;

  constructor(
    protected store: Store,
    private cacher: Cacher,
    targets: Targets,
    objectResource: string,
    /** the name of the object in each namespace */
    protected readonly objectName: string,
    /** for warnings: the controller's name */
    private readonly label: string,
  ) {
    this.nsT = targets.resolve('', 'v1', 'namespaces')!;
    this.objT = targets.resolve('', 'v1', objectResource)!;
  }

  /** Syncs every existing namespace, then follows changes. */
  async start(): Promise<void> {
    this.cacher.observe((cache, evs) => this.onEvents(cache, evs));
    await Promise.all([...this.store.cacheOf(this.nsT).items.values()].map((e) => this.sync(e.name)));
  }

  stop(): void {
    this.stopped = true;
  }

  /** Whether an event of this type on the object asks for a resync of its namespace. */
  protected abstract resyncOn(type: WatchEvent['type']): boolean;
  /** Makes the object right in ns, given its current cache entry (if any). */
  protected abstract reconcile(ns: string, cur: CacheEntry | undefined): Promise<void>;

  private onEvents(cache: ResourceCache, evs: WatchEvent[]): void {
    if (cache.gr === this.nsT.gr) {
      for (const ev of evs) if (ev.type === 'ADDED') void this.sync(ev.entry.name);
    } else if (cache.gr === this.objT.gr) {
      for (const ev of evs) if (ev.entry.name === this.objectName && this.resyncOn(ev.type)) void this.sync(ev.entry.ns);
    }
  }

  private async sync(ns: string): Promise<void> {
    if (this.stopped || this.pending.has(ns)) return;
    const nsEntry = this.store.cacheOf(this.nsT).items.get(objectKey('', ns));
    if (!nsEntry || entryObject(nsEntry)?.metadata?.deletionTimestamp) return;
    this.pending.add(ns);
    try {
      await this.reconcile(ns, this.store.cacheOf(this.objT).items.get(objectKey(ns, this.objectName)));
    } catch (e) {
      // A race with a client, or the namespace going meanwhile: the next event brings it back.
      if (!(e instanceof StatusError)) console.warn(`W ${this.label}: ${ns}/${this.objectName}: ${e}`);
    } finally {
      this.pending.delete(ns);
    }
  }
}
