// The PVC and PV protection controllers (kube-controller-manager's pvc-protection and
// pv-protection, in process). StorageObjectInUseProtection admission puts
// kubernetes.io/pvc-protection on every new claim and kubernetes.io/pv-protection on every
// new volume; in kube these controllers take the finalizer off a deleted claim once no
// pod uses it, and off a deleted volume once it is not Bound. No controller-manager runs
// beside kubeshard, so without this `kubectl delete pvc` would hang for ever: the same
// rules run here, in process.
//
// In use, as kube's controller decides: a pod scheduled to a node (spec.nodeName set; the
// kubelet refuses to start a pod whose claim is being deleted, so an unscheduled pod does
// not hold it) that has not finished (phase Succeeded or Failed) and names the claim in a
// persistentVolumeClaim volume or through a generic ephemeral volume (<pod>-<volume>).
//
// Thread ownership: the front thread, driven by the cache layer's committed batches (Cacher.observe).
import type { Cacher } from '../storage/cacher.js';
import type { Targets } from '../api/targets.js';
import { StatusError } from '../errors.js';
import { entryObject, type CacheEntry, type ResourceCache, type WatchEvent } from '../../workers/watch/watch-cache.js';
import { objectKey, type ResourceTarget, type Store } from '../registry/store.js';
import { PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER } from '../admission/storage-object-in-use-protection.js';

const arr = (v: unknown): any[] => (Array.isArray(v) ? v : []);

/** The claims a pod holds (none when it is unscheduled or finished). */
export function claimsInUse(pod: any): string[] {
  if (!pod?.spec?.nodeName) return [];
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return [];
  const out: string[] = [];
  for (const v of arr(pod.spec.volumes)) {
    if (typeof v?.persistentVolumeClaim?.claimName === 'string') out.push(v.persistentVolumeClaim.claimName);
    else if (v?.ephemeral && typeof v.name === 'string') out.push(`${pod.metadata?.name}-${v.name}`);
  }
  return out;
}

export class StorageProtectionController {
  private pvcT: ResourceTarget;
  private pvT: ResourceTarget;
  private podT: ResourceTarget;
  private pending = new Set<string>();
  private stopped = false;

  constructor(
    private store: Store,
    private cacher: Cacher,
    targets: Targets,
    private enabled = { claims: true, volumes: true },
  ) {
    this.pvcT = targets.resolve('', 'v1', 'persistentvolumeclaims')!;
    this.pvT = targets.resolve('', 'v1', 'persistentvolumes')!;
    this.podT = targets.resolve('', 'v1', 'pods')!;
  }

  start(): void {
    this.cacher.observe((cache, evs) => this.onEvents(cache, evs));
    for (const e of this.store.cacheOf(this.pvcT).items.values()) this.checkClaim(e.ns, e.name);
    for (const e of this.store.cacheOf(this.pvT).items.values()) this.checkVolume(e.name);
  }

  stop(): void {
    this.stopped = true;
  }

  private onEvents(cache: ResourceCache, evs: WatchEvent[]): void {
    if (cache.gr === this.pvcT.gr) {
      for (const ev of evs) if (ev.type !== 'DELETED') this.checkClaim(ev.entry.ns, ev.entry.name);
    } else if (cache.gr === this.pvT.gr) {
      for (const ev of evs) if (ev.type !== 'DELETED') this.checkVolume(ev.entry.name);
    } else if (cache.gr === this.podT.gr) {
      // A pod that stopped holding claims (gone, finished, or changed) may free them.
      for (const ev of evs) {
        const before = ev.prev ? claimsInUse(entryObject(ev.prev)) : ev.type === 'DELETED' ? claimsInUse(entryObject(ev.entry)) : [];
        const after = ev.type === 'DELETED' ? [] : claimsInUse(entryObject(ev.entry));
        for (const c of before) if (!after.includes(c)) this.checkClaim(ev.entry.ns, c);
      }
    }
  }

  private terminatingWith(e: CacheEntry | undefined, finalizer: string): boolean {
    const m = e ? entryObject(e)?.metadata : undefined;
    return !!m?.deletionTimestamp && arr(m.finalizers).includes(finalizer);
  }

  private checkClaim(ns: string, name: string): void {
    if (!this.enabled.claims) return;
    const e = this.store.cacheOf(this.pvcT).items.get(objectKey(ns, name));
    if (!this.terminatingWith(e, PVC_PROTECTION_FINALIZER)) return;
    const used = this.store
      .cacheOf(this.podT)
      .list(ns)
      .some((p) => claimsInUse(entryObject(p)).includes(name));
    if (!used) void this.release(this.pvcT, ns, name, PVC_PROTECTION_FINALIZER);
  }

  private checkVolume(name: string): void {
    if (!this.enabled.volumes) return;
    const e = this.store.cacheOf(this.pvT).items.get(objectKey('', name));
    if (!this.terminatingWith(e, PV_PROTECTION_FINALIZER)) return;
    if (entryObject(e!)?.status?.phase === 'Bound') return;
    void this.release(this.pvT, '', name, PV_PROTECTION_FINALIZER);
  }

  /** Takes the finalizer off (the store deletes the object when it was the last one). */
  private async release(t: ResourceTarget, ns: string, name: string, finalizer: string): Promise<void> {
    const key = `${t.gr}/${objectKey(ns, name)}`;
    if (this.stopped || this.pending.has(key)) return;
    this.pending.add(key);
    try {
      await this.store.guaranteedUpdate(t, ns, name, { dryRun: false, subresource: '' }, (o) => {
        delete o.metadata.resourceVersion;
        const left = arr(o.metadata.finalizers).filter((f: string) => f !== finalizer);
        if (left.length) o.metadata.finalizers = left;
        else delete o.metadata.finalizers;
        return o;
      });
    } catch (e) {
      if (!(e instanceof StatusError)) console.warn(`W storage protection: ${key}: ${e}`);
    } finally {
      this.pending.delete(key);
    }
  }
}
