// The root CA publisher (kube-controller-manager's root-ca-cert-publisher, in process):
// every active namespace holds the ConfigMap kube-root-ca.crt whose ca.crt is the CA that
// signs the serving certificate, which the ServiceAccount admission's token volume
// projects into pods. Created with the namespace (the initial ones at start), again when
// deleted, and put back when its data is changed.
//
// Thread ownership: the front thread, driven by the coordinator's committed batches as the
// ServiceAccount controller is. Writes go through the generic store, so watchers see them.
import type { Coordinator } from '../coordinator/coordinator.js';
import type { Targets } from '../api/targets.js';
import { StatusError } from '../errors.js';
import { entryObject, type ResourceCache, type WatchEvent } from '../../workers/watch/watch-cache.js';
import { objectKey, type ResourceTarget, type Store } from '../registry/store.js';
import { ROOT_CA_CONFIGMAP } from '../admission/service-account.js';

// The description kube's publisher puts on the ConfigMap.
const DESCRIPTION =
  'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.';

export class RootCaPublisher {
  private nsT: ResourceTarget;
  private cmT: ResourceTarget;
  private pending = new Set<string>();
  private stopped = false;

  constructor(
    private store: Store,
    private coord: Coordinator,
    targets: Targets,
    private caPem: string,
  ) {
    this.nsT = targets.resolve('', 'v1', 'namespaces')!;
    this.cmT = targets.resolve('', 'v1', 'configmaps')!;
  }

  async start(): Promise<void> {
    this.coord.observe((cache, evs) => this.onEvents(cache, evs));
    await Promise.all([...this.store.cacheOf(this.nsT).items.values()].map((e) => this.sync(e.name)));
  }

  stop(): void {
    this.stopped = true;
  }

  private onEvents(cache: ResourceCache, evs: WatchEvent[]): void {
    if (cache.gr === this.nsT.gr) {
      for (const ev of evs) if (ev.type === 'ADDED') void this.sync(ev.entry.name);
    } else if (cache.gr === this.cmT.gr) {
      for (const ev of evs) if (ev.entry.name === ROOT_CA_CONFIGMAP && ev.type !== 'ADDED') void this.sync(ev.entry.ns);
    }
  }

  private async sync(ns: string): Promise<void> {
    if (this.stopped || this.pending.has(ns)) return;
    const nsEntry = this.store.cacheOf(this.nsT).items.get(objectKey('', ns));
    if (!nsEntry || entryObject(nsEntry)?.metadata?.deletionTimestamp) return;
    const cur = this.store.cacheOf(this.cmT).items.get(objectKey(ns, ROOT_CA_CONFIGMAP));
    const data = { 'ca.crt': this.caPem };
    this.pending.add(ns);
    try {
      if (!cur) {
        const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: ROOT_CA_CONFIGMAP, namespace: ns, annotations: { 'kubernetes.io/description': DESCRIPTION } }, data };
        await this.store.create(this.cmT, ns, cm, { dryRun: false });
      } else {
        const obj = entryObject(cur);
        if (obj?.metadata?.deletionTimestamp) return;
        const same = obj?.data && Object.keys(obj.data).length === 1 && obj.data['ca.crt'] === this.caPem && !obj.binaryData;
        if (same) return;
        await this.store.guaranteedUpdate(this.cmT, ns, ROOT_CA_CONFIGMAP, { dryRun: false, subresource: '' }, (o) => {
          delete o.metadata.resourceVersion;
          delete o.binaryData;
          o.data = { ...data };
          return o;
        });
      }
    } catch (e) {
      // A race with a client or the namespace going: the next event brings it back.
      if (!(e instanceof StatusError)) console.warn(`W root-ca-cert-publisher: ${ns}/${ROOT_CA_CONFIGMAP}: ${e}`);
    } finally {
      this.pending.delete(ns);
    }
  }
}
