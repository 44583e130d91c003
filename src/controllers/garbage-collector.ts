// The garbage collector (kube-controller-manager's, in process): deletes dependents whose
// owners are gone, through metadata.ownerReferences (matched by uid), and finishes the two
// deletion modes that wait on dependents:
//
//   - `orphan`: the owner's dependents lose their reference to it, then the finalizer goes;
//   - `foregroundDeletion`: the owner's dependents are deleted (in the foreground too), and
//     once none with blockOwnerDeletion is left the finalizer goes, and the owner with it.
//
// Thread ownership: the front thread. It is driven by the watch caches: the cache layer
// hands it every committed batch (after the watchers), it keeps an index from owner uid to
// dependents, and it works through a queue of objects to look at again. Every write it
// makes goes through the generic store, so it is seen by watchers like any other.
import type { Cacher } from '../storage/cacher.js';
import type { Catalog } from '../api/catalog.js';
import type { Targets } from '../api/targets.js';
import { StatusError } from '../errors.js';
import { entryObject, HINT_DELETION_TIMESTAMP, HINT_OWNER_REFERENCES, mayHold, type CacheEntry, type ResourceCache, type WatchEvent } from '../../workers/watch/watch-cache.js';
import { objectKey, type ResourceTarget, type Store } from '../registry/store.js';
import { FINALIZER_FOREGROUND, FINALIZER_ORPHAN } from '../registry/deletion.js';

const MAX_CONCURRENT = 32;
const RETRY_MS = 200;
/** the longest the start-up indexing holds the event loop at a time */
const START_SLICE_MS = 5;

/** "<gr>\0<ns>/<name>": one object of one type. */
type ObjectId = string;

interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  blockOwnerDeletion?: boolean;
}

function idOf(gr: string, key: string): ObjectId {
  return `${gr}\u0000${key}`;
}

function splitId(id: ObjectId): [string, string] {
  const i = id.indexOf('\u0000');
  return [id.slice(0, i), id.slice(i + 1)];
}

function groupOf(apiVersion: string): string {
  const i = apiVersion.indexOf('/');
  return i < 0 ? '' : apiVersion.slice(0, i);
}

export class GarbageCollector {
  /** owner uid -> the objects that reference it */
  private dependents = new Map<string, Set<ObjectId>>();
  /** dependent -> the owner uids it references (to keep the index right when it changes) */
  private ownersOf = new Map<ObjectId, string[]>();
  /** owner uid -> the owner, while it is being deleted with a GC finalizer */
  private deletingOwners = new Map<string, ObjectId>();
  private byGr = new Map<string, ResourceTarget>();
  private byKind = new Map<string, ResourceTarget>();
  /** queued work: "dep:" + id (is it garbage?) and "own:" + id (an owner being deleted) */
  private queue = new Set<string>();
  private inFlight = new Set<string>();
  private again = new Set<string>();
  private active = 0;
  private stopped = false;

  constructor(
    private store: Store,
    private cacher: Cacher,
    private catalog: Catalog,
    private targets: Targets,
  ) {
    this.learnTypes();
  }

  /**
   * Indexes the served types. Run again when the catalog changes: custom resources come and
   * go with their CRDs (src/registry/crd/crd-controller.ts).
   */
  private catalogGeneration = -1;
  private learnTypes(): void {
    const { catalog, targets } = this;
    if (this.catalogGeneration === catalog.generation) return;
    this.catalogGeneration = catalog.generation;
    for (const gv of catalog.servedGroupVersions()) {
      for (const info of gv.resources) {
        const t = targets.preferred(info.group, info.resource);
        if (!t) continue;
        // Versions that share a storage (core and events.k8s.io events) are one type: the one read without conversion stands for it.
        if (!this.byGr.has(t.gr) || !t.conv) this.byGr.set(t.gr, t);
        if (!this.byKind.has(`${info.group}/${info.kind}`)) this.byKind.set(`${info.group}/${info.kind}`, t);
      }
    }
  }

  /** Indexes what is stored, queues what a restart left unfinished, then follows every commit. */
  start(): void {
    this.cacher.observe((cache, evs) => this.onEvents(cache, evs));
    // What is stored is indexed in slices of START_SLICE_MS, one per turn of the event
    // loop: start-up (and readiness) does not wait for a look at every object, as kube's
    // garbage collector builds its graph from its informers in the background. A commit
    // meanwhile is seen at once (above); the slices read each object as it is then.
    const pending = this.cacher.resourceTypes().map((gr) => ({ gr, it: this.cacher.cache(gr).items.values() }));
    const slice = () => {
      if (this.stopped) return;
      const until = performance.now() + START_SLICE_MS;
      let n = 0;
      while (pending.length > 0 && ((++n & 255) !== 0 || performance.now() < until)) {
        const { gr, it } = pending[0];
        const r = it.next();
        if (r.done) pending.shift();
        else this.observe(gr, r.value, undefined, 'ADDED', true);
      }
      if (pending.length > 0) setImmediate(slice);
      else for (const id of this.ownersOf.keys()) this.enqueue('dep:' + id);
    };
    slice();
  }

  stop(): void {
    this.stopped = true;
  }

  /** Objects currently indexed as dependents (for tests and metrics). */
  get indexedDependents(): number {
    return this.ownersOf.size;
  }

  private onEvents(cache: ResourceCache, evs: WatchEvent[]): void {
    if (!this.byGr.has(cache.gr)) this.learnTypes();
    if (!this.byGr.has(cache.gr)) return;
    for (const ev of evs) this.observe(cache.gr, ev.entry, ev.prev, ev.type, false);
  }

  private observe(gr: string, e: CacheEntry, prev: CacheEntry | undefined, type: string, loading: boolean): void {
    const id = idOf(gr, e.key);
    // A commit hands its object along (e.obj): two property reads instead of two searches of
    // the bytes. The byte search (a restart's load, a read from storage) may also find the
    // text outside metadata; that only costs an extra look, as below.
    const m = e.obj !== undefined ? e.obj?.metadata : undefined;
    const hasRefs = m !== undefined ? m?.ownerReferences !== undefined : mayHold(e, HINT_OWNER_REFERENCES);
    // 1. the dependents index
    if (hasRefs || this.ownersOf.has(id)) {
      const refs: OwnerRef[] = type === 'DELETED' || !hasRefs ? [] : (entryObject(e)?.metadata?.ownerReferences ?? []);
      this.reindex(id, refs.map((r) => r?.uid).filter((u): u is string => typeof u === 'string'));
      if (refs.length && !loading) this.enqueue('dep:' + id);
    }
    // 2. an owner that went away, or is being deleted: its dependents need a look
    const deleting = m !== undefined ? m?.deletionTimestamp !== undefined : mayHold(e, HINT_DELETION_TIMESTAMP);
    if ((type === 'DELETED' || deleting) && this.dependents.size > 0) {
      const uid: string | undefined = entryObject(e)?.metadata?.uid;
      const deps = uid ? this.dependents.get(uid) : undefined;
      if (deps && !loading) for (const d of deps) this.enqueue('dep:' + d);
    }
    // 3. an owner with a GC finalizer to finish
    if (deleting && type !== 'DELETED') {
      const m = entryObject(e)?.metadata;
      const fins: string[] = m?.finalizers ?? [];
      if (m?.deletionTimestamp && (fins.includes(FINALIZER_ORPHAN) || fins.includes(FINALIZER_FOREGROUND))) {
        this.deletingOwners.set(m.uid, id);
        this.enqueue('own:' + id);
        return;
      }
    }
    if ((type === 'DELETED' || deleting) && this.deletingOwners.size > 0) {
      const uid = entryObject(e)?.metadata?.uid;
      if (uid && this.deletingOwners.get(uid) === id) this.deletingOwners.delete(uid);
    }
    void prev;
  }

  private reindex(id: ObjectId, uids: string[]): void {
    const before = this.ownersOf.get(id) ?? [];
    for (const u of before) {
      if (uids.includes(u)) continue;
      const set = this.dependents.get(u);
      set?.delete(id);
      if (set && set.size === 0) this.dependents.delete(u);
      // An owner waiting on its dependents may now be done.
      const owner = this.deletingOwners.get(u);
      if (owner) this.enqueue('own:' + owner);
    }
    for (const u of uids) {
      let set = this.dependents.get(u);
      if (!set) this.dependents.set(u, (set = new Set()));
      set.add(id);
    }
    if (uids.length) this.ownersOf.set(id, uids);
    else this.ownersOf.delete(id);
  }

  // ---------------------------------------------------------------- the work queue

  private enqueue(item: string): void {
    if (this.stopped) return;
    if (this.inFlight.has(item)) {
      this.again.add(item);
      return;
    }
    this.queue.add(item);
    this.pump();
  }

  private pump(): void {
    while (this.active < MAX_CONCURRENT && this.queue.size > 0 && !this.stopped) {
      const item = this.queue.values().next().value as string;
      this.queue.delete(item);
      this.inFlight.add(item);
      this.active++;
      const work = item.startsWith('dep:') ? this.attemptToDelete(item.slice(4)) : this.processDeletingOwner(item.slice(4));
      work
        .catch((err) => {
          // A lost race or a transient failure: look again shortly.
          if (!(err instanceof StatusError && err.code === 404)) {
            setTimeout(() => this.enqueue(item), RETRY_MS).unref?.();
          }
        })
        .finally(() => {
          this.active--;
          this.inFlight.delete(item);
          if (this.again.delete(item)) this.queue.add(item);
          this.pump();
        });
    }
  }

  private lookup(id: ObjectId): { t: ResourceTarget; e: CacheEntry; obj: any } | undefined {
    const [gr, key] = splitId(id);
    const t = this.byGr.get(gr);
    if (!t) return undefined;
    const e = this.store.cacheOf(t).items.get(key);
    return e ? { t, e, obj: entryObject(e) } : undefined;
  }

  /** The state of one owner reference of an object in namespace ns. */
  private classify(ref: OwnerRef, ns: string): 'solid' | 'dangling' | 'waiting' {
    if (!this.byKind.has(`${groupOf(ref.apiVersion ?? '')}/${ref.kind}`)) this.learnTypes();
    const t = this.byKind.get(`${groupOf(ref.apiVersion ?? '')}/${ref.kind}`);
    if (!t) return 'solid'; // a kind this server does not serve: never collect on a guess
    if (t.info.namespaced && ns === '') return 'dangling';
    const e = this.store.cacheOf(t).items.get(objectKey(t.info.namespaced ? ns : '', ref.name));
    if (!e) return 'dangling';
    const o = entryObject(e);
    if (o?.metadata?.uid !== ref.uid) return 'dangling';
    if (o.metadata.deletionTimestamp && (o.metadata.finalizers ?? []).includes(FINALIZER_FOREGROUND)) return 'waiting';
    return 'solid';
  }

  /** kube's attemptToDeleteItem: deletes a dependent whose owners are all gone or waiting on it. */
  private async attemptToDelete(id: ObjectId): Promise<void> {
    const cur = this.lookup(id);
    if (!cur) return;
    const m = cur.obj.metadata;
    const refs: OwnerRef[] = m.ownerReferences ?? [];
    if (refs.length === 0) return;
    const fins: string[] = m.finalizers ?? [];
    if (m.deletionTimestamp && !fins.includes(FINALIZER_FOREGROUND)) return; // already on its way
    const solid: OwnerRef[] = [];
    const gone: OwnerRef[] = [];
    let waiting = 0;
    for (const r of refs) {
      const c = this.classify(r, cur.e.ns);
      if (c === 'solid') solid.push(r);
      else {
        gone.push(r);
        if (c === 'waiting') waiting++;
      }
    }
    if (solid.length > 0) {
      // Still owned: only the references to owners that are gone (or going) are dropped.
      if (gone.length === 0) return;
      await this.removeOwnerRefs(cur.t, cur.e, new Set(gone.map((r) => r.uid)));
      return;
    }
    let policy = 'Background';
    if (waiting > 0 && (this.dependents.get(m.uid)?.size ?? 0) > 0) policy = 'Foreground';
    else if (fins.includes(FINALIZER_ORPHAN)) policy = 'Orphan';
    else if (fins.includes(FINALIZER_FOREGROUND)) policy = 'Foreground';
    await this.store.delete(cur.t, cur.e.ns, cur.e.name, { dryRun: false, propagationPolicy: policy, preconditions: { uid: m.uid } });
  }

  /** An owner being deleted with `orphan` or `foregroundDeletion`: finishes what it waits for. */
  private async processDeletingOwner(id: ObjectId): Promise<void> {
    const cur = this.lookup(id);
    if (!cur) return;
    const m = cur.obj.metadata;
    if (!m.deletionTimestamp) return;
    const fins: string[] = m.finalizers ?? [];
    const deps = [...(this.dependents.get(m.uid) ?? [])];
    if (fins.includes(FINALIZER_ORPHAN)) {
      // Orphan: every dependent forgets this owner, then the finalizer goes.
      await Promise.all(
        deps.map(async (d) => {
          const dep = this.lookup(d);
          if (dep) await this.removeOwnerRefs(dep.t, dep.e, new Set([m.uid]));
        }),
      );
      await this.removeFinalizer(cur.t, cur.e, FINALIZER_ORPHAN, m.uid);
      return;
    }
    if (fins.includes(FINALIZER_FOREGROUND)) {
      let blocking = 0;
      for (const d of deps) {
        const dep = this.lookup(d);
        if (!dep) continue;
        const ref = (dep.obj.metadata.ownerReferences ?? []).find((r: OwnerRef) => r?.uid === m.uid);
        if (ref?.blockOwnerDeletion === true) blocking++;
        this.enqueue('dep:' + d);
      }
      if (blocking === 0) await this.removeFinalizer(cur.t, cur.e, FINALIZER_FOREGROUND, m.uid);
    }
  }

  private removeOwnerRefs(t: ResourceTarget, e: CacheEntry, uids: Set<string>): Promise<unknown> {
    return this.store.guaranteedUpdate(t, e.ns, e.name, { dryRun: false, subresource: '' }, (obj) => {
      delete obj.metadata.resourceVersion; // unconditional: a lost race is retried with the fresh object
      const refs: OwnerRef[] = obj.metadata.ownerReferences ?? [];
      const kept = refs.filter((r) => !uids.has(r?.uid));
      if (kept.length) obj.metadata.ownerReferences = kept;
      else delete obj.metadata.ownerReferences;
      return obj;
    });
  }

  private removeFinalizer(t: ResourceTarget, e: CacheEntry, finalizer: string, uid: string): Promise<unknown> {
    return this.store.guaranteedUpdate(t, e.ns, e.name, { dryRun: false, subresource: '' }, (obj) => {
      delete obj.metadata.resourceVersion;
      if (obj.metadata.uid !== uid) return obj;
      const kept = (obj.metadata.finalizers ?? []).filter((f: string) => f !== finalizer);
      if (kept.length) obj.metadata.finalizers = kept;
      else delete obj.metadata.finalizers;
      return obj;
    });
  }
}
