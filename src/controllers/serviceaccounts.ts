// The service-account controller (kube-controller-manager's, in process): every active
// namespace has a ServiceAccount named `default`. It is created when a namespace appears
// (the initial ones included) and again when it is deleted while its namespace lives on.
//
// Thread ownership: the front thread, driven by the cache layer's committed batches (Cacher.observe) as the
// garbage collector is. Creates go through the generic store, so watchers see them.
import type { Cacher } from '../storage/cacher.js';
import type { Targets } from '../api/targets.js';
import type { CacheEntry, WatchEvent } from '../../workers/watch/watch-cache.js';
import type { Store } from '../registry/store.js';
import { PerNamespaceObjectController } from './per-namespace-object.js';

const DEFAULT_NAME = 'default';

export class ServiceAccountsController extends PerNamespaceObjectController {
  constructor(store: Store, cacher: Cacher, targets: Targets) {
    super(store, cacher, targets, 'serviceaccounts', DEFAULT_NAME, 'serviceaccounts controller');
  }

  protected resyncOn(type: WatchEvent['type']): boolean {
    return type === 'DELETED';
  }

  protected async reconcile(ns: string, cur: CacheEntry | undefined): Promise<void> {
    if (cur) return;
    await this.store.create(this.objT, ns, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: DEFAULT_NAME, namespace: ns } }, { dryRun: false });
  }
}
