// The CRD controllers of apiextensions-apiserver, in process: naming (accepted names and
// NamesAccepted), establishing (Established after NamesAccepted), serving (the served set
// of custom resources follows the established CRDs, at start-up too) and finalizing (a
// deleted CRD's instances are deleted, then its cleanup finalizer is lifted and it goes).
//
// Thread ownership: the front thread, driven by the CRD cache's committed events
// (Cacher.observe). Every write goes through the generic store (status subresource),
// so watchers of CRDs see it like any other.
import type { Cacher } from '../../storage/cacher.js';
import type { Targets } from '../../api/targets.js';
import { CustomResources, servedVersions, type CustomVersion } from '../../api/custom-resources.js';
import { entryObject } from '../../../workers/watch/watch-cache.js';
import { StatusError } from '../../errors.js';
import type { ResourceTarget, Store } from '../store.js';
import { CustomResourceStrategy } from './custom-strategy.js';
import { CRD_CLEANUP_FINALIZER, conditionOf, isEstablished, setCondition, validateCrd } from './crd-strategy.js';

const CRD_GR = 'customresourcedefinitions.apiextensions.k8s.io';
const RETRY_MS = 250;

export class CrdController {
  private scheduled = false;
  private running = false;
  private again = false;
  private stopped = false;
  private timer?: NodeJS.Timeout;
  /** one strategy per served version, kept while the CRD's version is unchanged */
  private strategies = new Map<string, { key: string; strategy: CustomResourceStrategy }>();
  private served = new Map<string, CustomVersion>();

  constructor(
    private store: Store,
    private cacher: Cacher,
    private targets: Targets,
    private custom: CustomResources,
  ) {
    targets.setDynamic((group, version, resource) => {
      const cv = this.served.get(`${group}/${version}/${resource}`);
      if (!cv) return undefined;
      const key = JSON.stringify(cv);
      let s = this.strategies.get(`${group}/${version}/${resource}`);
      if (!s || s.key !== key) this.strategies.set(`${group}/${version}/${resource}`, (s = { key, strategy: new CustomResourceStrategy(cv) }));
      return { strategy: s.strategy, nameRule: 'subdomain' };
    });
  }

  /** Serves what is stored and established, then follows every change. */
  async start(): Promise<void> {
    this.publish();
    this.cacher.observe((cache) => {
      if (cache.gr === CRD_GR) this.schedule();
    });
    await this.reconcile();
  }

  /**
   * On another front thread than the main one: serves what is established and follows the
   * changes, without writing (the main thread's controller names, establishes and finalizes).
   */
  async follow(): Promise<void> {
    this.publish();
    this.cacher.observe((cache) => {
      if (cache.gr === CRD_GR && !this.stopped) this.publish();
    });
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private crds(): any[] {
    return Array.from(this.cacher.cache(CRD_GR).items.values(), (e) => entryObject(e));
  }

  private crdTarget(): ResourceTarget {
    return this.targets.resolve('apiextensions.k8s.io', 'v1', 'customresourcedefinitions')!;
  }

  /** The served set: established CRDs that are valid (a stored one that is not is left unserved). */
  private publish(): void {
    const crds = this.crds().filter((c) => isEstablished(c) && validateCrd(c).length === 0);
    this.served.clear();
    for (const crd of crds) for (const cv of servedVersions(crd)) this.served.set(`${cv.group}/${cv.version}/${cv.plural}`, cv);
    // field labels changed: the selectable values memoized on cached objects are recomputed
    const relabelled = this.custom.publish(crds);
    if (relabelled.length) {
      for (const cache of this.cacher.caches()) if (relabelled.includes(cache.gr)) for (const e of cache.items.values()) e.sel = undefined;
    }
  }

  private schedule(delay = 0): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    const run = () => {
      this.scheduled = false;
      void this.reconcile();
    };
    if (delay) this.timer = setTimeout(run, delay);
    else setImmediate(run);
  }

  private async reconcile(): Promise<void> {
    if (this.stopped) return;
    this.running = true;
    let retry = false;
    try {
      this.publish();
      const crds = this.crds();
      for (const crd of crds) {
        try {
          if (crd.metadata.deletionTimestamp) retry = (await this.finalize(crd)) || retry;
          else await this.establish(crd, crds);
        } catch (e) {
          if (!(e instanceof StatusError && (e.code === 404 || e.code === 409))) console.error(`crd controller: ${crd.metadata.name}:`, e);
          retry = true;
        }
      }
      this.publish();
    } finally {
      this.running = false;
    }
    if (this.again) {
      this.again = false;
      this.schedule();
    } else if (retry) this.schedule(RETRY_MS);
  }

  /** Names accepted unless another CRD of the group holds them; Established once they are. */
  private async establish(crd: any, all: any[]): Promise<void> {
    if (validateCrd(crd).length) return;
    const names = crd.spec.names;
    const group = crd.spec.group;
    // A name another CRD of the group has already accepted is not accepted again.
    const conflict = (field: 'plural' | 'kind'): boolean => all.some((o) => o.metadata.name !== crd.metadata.name && o.spec?.group === group && o.status?.acceptedNames?.[field] === names[field]);
    const want = structuredClone(crd);
    const st = (want.status ??= {});
    if (conflict('plural')) setCondition(want, 'NamesAccepted', 'False', 'PluralConflict', `"${names.plural}" is already in use`);
    else if (conflict('kind')) setCondition(want, 'NamesAccepted', 'False', 'KindConflict', `"${names.kind}" is already in use`);
    else {
      const accepted: Record<string, unknown> = { kind: names.kind, listKind: names.listKind, plural: names.plural, singular: names.singular };
      if (Array.isArray(names.shortNames) && names.shortNames.length) accepted.shortNames = names.shortNames;
      if (Array.isArray(names.categories) && names.categories.length) accepted.categories = names.categories;
      // kube keeps the key order of the Go struct: categories, kind, listKind, plural, shortNames, singular
      st.acceptedNames = Object.fromEntries(Object.keys(accepted).sort().map((k) => [k, accepted[k]]));
      setCondition(want, 'NamesAccepted', 'True', 'NoConflicts', 'no conflicts found');
      if (!isEstablished(want)) setCondition(want, 'Established', 'True', 'InitialNamesAccepted', 'the initial names have been accepted');
    }
    if (JSON.stringify(want.status) === JSON.stringify(crd.status)) return;
    await this.store.guaranteedUpdate(this.crdTarget(), '', crd.metadata.name, { dryRun: false, subresource: 'status' }, (cur) => {
      if (cur.metadata.uid !== crd.metadata.uid) return cur;
      delete cur.metadata.resourceVersion;
      cur.status = want.status;
      return cur;
    });
  }

  /**
   * A CRD being deleted: its instances go (every namespace), then the finalizer. True while
   * instances remain (their own finalizers may keep them a while): the caller retries.
   */
  private async finalize(crd: any): Promise<boolean> {
    if (!(crd.metadata.finalizers ?? []).includes(CRD_CLEANUP_FINALIZER)) return false;
    const gr = `${crd.spec.names.plural}.${crd.spec.group}`;
    const cache = this.cacher.cache(gr);
    // through the storage version, as kube's finalizer deletes (no conversion webhook called)
    const served = servedVersions(crd);
    const version = (served.find((v) => v.version === v.storageVersion) ?? served[0])?.version ?? crd.spec.versions?.[0]?.name;
    const t = this.targets.resolve(crd.spec.group, version, crd.spec.names.plural);
    if (cache.items.size > 0 && t) {
      const entries = [...cache.items.values()];
      await Promise.all(
        entries.map(async (e) => {
          try {
            await this.store.delete(t, e.ns, e.name, { dryRun: false });
          } catch (err) {
            if (!(err instanceof StatusError && err.code === 404)) throw err;
          }
        }),
      );
      if (cache.items.size > 0) return true;
    }
    await this.store.guaranteedUpdate(this.crdTarget(), '', crd.metadata.name, { dryRun: false, subresource: '' }, (cur) => {
      delete cur.metadata.resourceVersion;
      cur.metadata.finalizers = (cur.metadata.finalizers ?? []).filter((f: string) => f !== CRD_CLEANUP_FINALIZER);
      if (cur.metadata.finalizers.length === 0) delete cur.metadata.finalizers;
      if (conditionOf(cur, 'Terminating')) setCondition(cur, 'Terminating', 'False', 'InstanceDeletionCompleted', 'removed all instances');
      return cur;
    });
    return false;
  }
}
