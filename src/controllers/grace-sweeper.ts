// Ends graceful deletions. A pod deleted with a grace period keeps deletionTimestamp (the
// end of the period) and deletionGracePeriodSeconds > 0; on kube its kubelet stops it and
// confirms with a delete of grace 0. With no kubelet here, this sweeper makes that delete
// when the period ends; a node agent that confirms earlier simply gets there first.
//
// Thread ownership: the front thread, driven by the pods cache through the cache layer (Cacher.observe).
import type { Cacher } from '../storage/cacher.js';
import { entryObject, HINT_DELETION_TIMESTAMP, mayHold, type CacheEntry } from '../../workers/watch/watch-cache.js';
import type { ResourceTarget, Store } from '../registry/store.js';

const MAX_TIMER_MS = 2 ** 31 - 1;

export class GraceSweeper {
  private timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();

  constructor(
    private store: Store,
    private cacher: Cacher,
    private targets: ResourceTarget[],
  ) {}

  start(): void {
    const grs = new Map(this.targets.map((t) => [t.gr, t]));
    for (const t of this.targets) for (const e of this.store.cacheOf(t).items.values()) this.track(t, e, false);
    this.cacher.observe((cache, evs) => {
      const t = grs.get(cache.gr);
      if (!t) return;
      for (const ev of evs) this.track(t, ev.entry, ev.type === 'DELETED');
    });
  }

  stop(): void {
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  private track(t: ResourceTarget, e: CacheEntry, gone: boolean): void {
    const id = `${t.gr}\u0000${e.key}`;
    const had = this.timers.get(id);
    if (gone || !mayHold(e, HINT_DELETION_TIMESTAMP)) {
      if (had) {
        clearTimeout(had.timer);
        this.timers.delete(id);
      }
      return;
    }
    const m = entryObject(e)?.metadata;
    if (!m?.deletionTimestamp || !(m.deletionGracePeriodSeconds > 0)) return;
    const at = Date.parse(m.deletionTimestamp);
    if (had?.at === at) return;
    if (had) clearTimeout(had.timer);
    const uid: string = m.uid;
    const timer = setTimeout(() => {
      this.timers.delete(id);
      this.store.delete(t, e.ns, e.name, { dryRun: false, gracePeriodSeconds: 0, preconditions: { uid } }).catch(() => undefined);
    }, Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now())));
    timer.unref?.();
    this.timers.set(id, { at, timer });
  }
}
