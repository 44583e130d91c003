// The root CA publisher (kube-controller-manager's root-ca-cert-publisher, in process):
// every active namespace holds the ConfigMap kube-root-ca.crt whose ca.crt is the CA that
// signs the serving certificate, which the ServiceAccount admission's token volume
// projects into pods. Created with the namespace (the initial ones at start), again when
// deleted, and put back when its data is changed.
//
// Thread ownership: the front thread, driven by the cache layer's committed batches (Cacher.observe) as the
// ServiceAccount controller is. Writes go through the generic store, so watchers see them.
import type { Cacher } from '../storage/cacher.js';
import type { Targets } from '../api/targets.js';
import { entryObject, type CacheEntry, type WatchEvent } from '../../workers/watch/watch-cache.js';
import type { Store } from '../registry/store.js';
import { PerNamespaceObjectController } from './per-namespace-object.js';
import { ROOT_CA_CONFIGMAP } from '../admission/service-account.js';

// The description kube's publisher puts on the ConfigMap.
const DESCRIPTION =
  'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.';

export class RootCaPublisher extends PerNamespaceObjectController {
  constructor(
    store: Store,
    cacher: Cacher,
    targets: Targets,
    private caPem: string,
  ) {
    super(store, cacher, targets, 'configmaps', ROOT_CA_CONFIGMAP, 'root-ca-cert-publisher');
  }

  protected resyncOn(type: WatchEvent['type']): boolean {
    return type !== 'ADDED';
  }

  protected async reconcile(ns: string, cur: CacheEntry | undefined): Promise<void> {
    const data = { 'ca.crt': this.caPem };
    if (!cur) {
      const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: ROOT_CA_CONFIGMAP, namespace: ns, annotations: { 'kubernetes.io/description': DESCRIPTION } }, data };
      await this.store.create(this.objT, ns, cm, { dryRun: false });
      return;
    }
    const obj = entryObject(cur);
    if (obj?.metadata?.deletionTimestamp) return;
    const same = obj?.data && Object.keys(obj.data).length === 1 && obj.data['ca.crt'] === this.caPem && !obj.binaryData;
    if (same) return;
    await this.store.guaranteedUpdate(this.objT, ns, ROOT_CA_CONFIGMAP, { dryRun: false, subresource: '' }, (o) => {
      delete o.metadata.resourceVersion;
      delete o.binaryData;
      o.data = { ...data };
      return o;
    });
  }
}
