// The system PriorityClasses (kube-apiserver's scheduling/bootstrap-system-priority-classes
// post-start hook): system-node-critical and system-cluster-critical are created at start
// when missing, on whichever storage backend; one that exists is left as it is. They cannot
// be deleted one by one (kube's PriorityClass REST refuses it: refuseSystemClassDelete).
//
// Thread ownership: the front thread (run once at start by the main thread).
import type { Targets } from '../api/targets.js';
import { errors, StatusError } from '../errors.js';
import { objectKey, type ResourceTarget, type Store } from '../registry/store.js';

/** kube's SystemPriorityClasses: name, value, description. */
export const SYSTEM_PRIORITY_CLASSES: ReadonlyArray<{ name: string; value: number; description: string }> = [
  { name: 'system-node-critical', value: 2000001000, description: 'Used for system critical pods that must not be moved from their current node.' },
  { name: 'system-cluster-critical', value: 2000000000, description: 'Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.' },
];

export class PriorityClassBootstrap {
  private readonly t: ResourceTarget | undefined;

  constructor(
    private readonly store: Store,
    targets: Targets,
  ) {
    this.t = targets.resolve('scheduling.k8s.io', 'v1', 'priorityclasses');
  }

  async start(): Promise<void> {
    const t = this.t;
    if (!t) return; // the scheduling group switched off (--runtime-config)
    for (const pc of SYSTEM_PRIORITY_CLASSES) {
      if (this.store.cacheOf(t).items.has(objectKey('', pc.name))) continue;
      const obj = { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: pc.name }, value: pc.value, globalDefault: false, description: pc.description };
      try {
        await this.store.create(t, '', obj, { dryRun: false });
      } catch (e) {
        // another replica made it meanwhile
        if (!(e instanceof StatusError && e.code === 409)) throw e;
      }
    }
  }
}

/** kube's PriorityClass REST Delete: the system classes are not deleted (a 403). */
export function refuseSystemClassDelete(t: ResourceTarget, name: string): void {
  if (t.gr !== 'priorityclasses.scheduling.k8s.io') return;
  if (SYSTEM_PRIORITY_CLASSES.some((pc) => pc.name === name)) {
    throw errors.forbidden(t.groupResource, name, `priorityclasses.scheduling.k8s.io "${name}" is forbidden: this is a system priority class and cannot be deleted`);
  }
}
