// kube-controller-manager's validatingadmissionpolicy-status-controller, in process: each
// ValidatingAdmissionPolicy whose status.observedGeneration lags its generation is type
// checked against the kinds it matches (src/admission/policy/type-checking.ts) and gets
// status.typeChecking.expressionWarnings and status.observedGeneration.
//
// Thread ownership: the front thread that leads the controllers, driven by the cache layer's
// committed batches (Cacher.observe).
import type { Cacher } from '../storage/cacher.js';
import type { Targets } from '../api/targets.js';
import { StatusError } from '../errors.js';
import { entryObject, type ResourceCache, type WatchEvent } from '../../workers/watch/watch-cache.js';
import { objectKey, type ResourceTarget, type Store } from '../registry/store.js';
import type { ObjectSource } from '../admission/plugin.js';
import { typeCheckPolicy } from '../admission/policy/type-checking.js';

export class ValidatingAdmissionPolicyStatusController {
  private t: ResourceTarget;
  private pending = new Set<string>();
  private stopped = false;

  constructor(
    private store: Store,
    private cacher: Cacher,
    targets: Targets,
    private objects: ObjectSource,
  ) {
    this.t = targets.resolve('admissionregistration.k8s.io', 'v1', 'validatingadmissionpolicies')!;
  }

  start(): void {
    this.cacher.observe((cache, evs) => this.onEvents(cache, evs));
    for (const e of this.store.cacheOf(this.t).items.values()) this.reconcile(e.name);
  }

  stop(): void {
    this.stopped = true;
  }

  private onEvents(cache: ResourceCache, evs: WatchEvent[]): void {
    if (cache.gr !== this.t.gr) return;
    for (const ev of evs) if (ev.type !== 'DELETED') this.reconcile(ev.entry.name);
  }

  private reconcile(name: string): void {
    const e = this.store.cacheOf(this.t).items.get(objectKey('', name));
    const p = e ? entryObject(e) : undefined;
    if (!p || p.metadata?.deletionTimestamp) return;
    const generation = p.metadata?.generation;
    if (generation === undefined || p.status?.observedGeneration === generation) return;
    void this.write(name, generation, typeCheckPolicy(p, this.objects));
  }

  private async write(name: string, generation: number, warnings: Array<{ fieldRef: string; warning: string }>): Promise<void> {
    if (this.stopped || this.pending.has(name)) return;
    this.pending.add(name);
    try {
      await this.store.guaranteedUpdate(this.t, '', name, { dryRun: false, subresource: 'status' }, (o) => {
        delete o.metadata.resourceVersion;
        if (o.metadata.generation !== generation) return o; // changed again: the next event checks it
        o.status = { ...(o.status ?? {}), observedGeneration: generation, typeChecking: warnings.length ? { expressionWarnings: warnings } : {} };
        return o;
      });
    } catch (err) {
      if (!(err instanceof StatusError)) console.warn(`W validatingadmissionpolicy status: ${name}: ${err}`);
    } finally {
      this.pending.delete(name);
    }
  }
}
