// The upkeep of one default object that kube-apiserver creates at start (RBAC's bootstrap
// roles and bindings, APF's flow schemas and priority levels): created when missing; while
// it still carries its kind's autoupdate annotation "true" (and is not being deleted),
// brought back to what the bootstrap wants; a user who set "false" keeps theirs.
//
// Thread ownership: the front thread (the bootstrap controllers').
import { StatusError } from '../errors.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import { objectKey, type ResourceTarget, type Store } from '../registry/store.js';

export interface BootstrapUpkeep {
  /** the annotation whose "true" lets the object be reconciled */
  annotation: string;
  /** the object as it should be, or null when `have` is already right (have is shared: never mutate it) */
  reconcile(have: any): any | null;
  /** for warnings: who keeps the object */
  label: string;
  /**
   * RBAC's rule (kube's reconciliation Protected): only the annotation "false" keeps the
   * object as it is; one without the annotation is reconciled and gets it back. Otherwise
   * anything but "true" keeps it.
   */
  protectedOnlyByFalse?: boolean;
  /** whether `have` cannot be brought back by an update (a binding's immutable roleRef): deleted and created anew, as kube's ReconcileRecreate */
  recreate?(have: any): boolean;
}

/** Creates the object `want` (cluster-scoped, or in its metadata.namespace) when missing, else reconciles it as `how` says. */
export async function ensureBootstrapObject(store: Store, t: ResourceTarget, want: any, how: BootstrapUpkeep): Promise<void> {
  const name = want.metadata.name;
  const ns: string = want.metadata.namespace ?? '';
  try {
    const cur = store.cacheOf(t).items.get(objectKey(ns, name));
    if (!cur) {
      await store.create(t, ns, structuredClone(want), { dryRun: false });
      return;
    }
    const obj = entryObject(cur);
    const mark = obj?.metadata?.annotations?.[how.annotation];
    if ((how.protectedOnlyByFalse ? mark === 'false' : mark !== 'true') || obj?.metadata?.deletionTimestamp) return;
    if (how.recreate?.(obj)) {
      await store.delete(t, ns, name, { dryRun: false, preconditions: { uid: obj.metadata.uid } });
      await store.create(t, ns, structuredClone(want), { dryRun: false });
      return;
    }
    if (!how.reconcile(obj)) return;
    await store.guaranteedUpdate(t, ns, name, { dryRun: false, subresource: '' }, (o) => {
      delete o.metadata.resourceVersion;
      return how.reconcile(o) ?? o;
    });
  } catch (e) {
    // A race with a client (409) leaves the client's object; anything else is worth a line.
    if (!(e instanceof StatusError && e.code === 409)) console.warn(`W ${how.label}: ${t.gr} ${ns ? `${ns}/` : ''}${name}: ${e}`);
  }
}
