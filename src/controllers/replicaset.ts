// The ReplicaSet controller (kube-controller-manager's replicaset controller, in process and
// leader-elected): keeps as many active pods as spec.replicas for every ReplicaSet, owned
// through a controller ownerReference; adopts the orphans its selector matches and releases
// the pods it owns that its selector no longer matches; keeps .status (replicas,
// fullyLabeledReplicas, readyReplicas, availableReplicas with minReadySeconds,
// observedGeneration, the ReplicaFailure condition).
//
// Mirrors pkg/controller/replicaset/replica_set.go: expectations (a ReplicaSet whose
// creations and deletions have not all been seen in the cache yet is not managed again, so
// a slow cache never makes it create twice), creations in slow-start batches (1, 2, 4, ...
// at most 500 a sync) that stop at the first failure, and the deletion ranking of
// controller.ActivePods (unscheduled, pending, not ready and newer pods go first). Events on
// the ReplicaSet as kube's RealPodControl records them, from "replicaset-controller":
// SuccessfulCreate "Created pod: NAME", FailedCreate "Error creating: ...",
// SuccessfulDelete "Deleted pod: NAME", FailedDelete "Error deleting: ...".
//
// Thread ownership: the main thread. Driven by the cache layer's committed batches
// (Cacher.observe) through a KeyQueue of "<namespace>/<name>"; reads come from the watch
// caches, writes go through the generic store like any client's.
import type { Cacher } from '../storage/cacher.js';
import type { Targets } from '../api/targets.js';
import { StatusError } from '../errors.js';
import { entryObject, type CacheEntry, type ResourceCache, type WatchEvent } from '../../workers/watch/watch-cache.js';
import { nowTimestamp, type ResourceTarget, type Store } from '../registry/store.js';
import { deepEqual } from '../registry/managed-fields.js';
import { selectorMatches } from '../registry/validation/selector.js';
import { EventRecorder } from './event-recorder.js';
import { KeyQueue } from './key-queue.js';

/** kube's BurstReplicas: the most pods one sync creates or deletes */
export const BURST_REPLICAS = 500;
/** kube's SlowStartInitialBatchSize */
const SLOW_START_INITIAL_BATCH = 1;
/** kube's ExpectationsTimeout: expectations never seen are given up after this */
const EXPECTATIONS_TIMEOUT_MS = 5 * 60_000;
const WORKERS = 5;

export interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export function controllerRef(obj: any): OwnerRef | undefined {
  const refs = obj?.metadata?.ownerReferences;
  return Array.isArray(refs) ? refs.find((r: any) => r?.controller === true) : undefined;
}

/** kube's podutil.IsPodReady */
export function podReady(pod: any): boolean {
  return (pod?.status?.conditions ?? []).some((c: any) => c?.type === 'Ready' && c?.status === 'True');
}

/** kube's podutil.IsPodAvailable: ready for at least minReadySeconds at time now (ms). */
export function podAvailable(pod: any, minReadySeconds: number, now: number): boolean {
  const c = (pod?.status?.conditions ?? []).find((c: any) => c?.type === 'Ready');
  if (c?.status !== 'True') return false;
  if (!minReadySeconds) return true;
  const since = Date.parse(c.lastTransitionTime ?? '');
  return Number.isFinite(since) && since + minReadySeconds * 1000 <= now;
}

/** kube's controller.IsPodActive: not finished and not being deleted */
export function podActive(pod: any): boolean {
  const phase = pod?.status?.phase;
  return phase !== 'Succeeded' && phase !== 'Failed' && !pod?.metadata?.deletionTimestamp;
}

/** A selector that selects something: apps' empty selector matches no pod. */
export function workloadSelects(sel: any, labels: unknown): boolean {
  if (!sel || (Object.keys(sel.matchLabels ?? {}).length === 0 && (sel.matchExpressions ?? []).length === 0)) return false;
  return selectorMatches(sel, labels);
}

const PHASE_RANK: Record<string, number> = { Pending: 0, Unknown: 1, Running: 2 };

/**
 * The order in which a ReplicaSet gives up its pods (kube's ActivePods Less): unassigned
 * before assigned, Pending before Unknown before Running, not ready before ready, ready a
 * shorter time before longer, more restarts before fewer, newer before older.
 */
export function deletionOrder(a: any, b: any): number {
  const an = a.spec?.nodeName ? 1 : 0;
  const bn = b.spec?.nodeName ? 1 : 0;
  if (an !== bn) return an - bn;
  const ap = PHASE_RANK[a.status?.phase] ?? 0;
  const bp = PHASE_RANK[b.status?.phase] ?? 0;
  if (ap !== bp) return ap - bp;
  const ar = podReady(a) ? 1 : 0;
  const br = podReady(b) ? 1 : 0;
  if (ar !== br) return ar - br;
  if (ar && br) {
    const at = readySince(a);
    const bt = readySince(b);
    if (at !== bt) return bt - at; // the later ready goes first
  }
  const rc = restarts(b) - restarts(a);
  if (rc !== 0) return rc;
  const ac = Date.parse(a.metadata?.creationTimestamp ?? '') || 0;
  const bc = Date.parse(b.metadata?.creationTimestamp ?? '') || 0;
  return bc - ac;
}

function readySince(p: any): number {
  const c = (p.status?.conditions ?? []).find((c: any) => c?.type === 'Ready');
  return Date.parse(c?.lastTransitionTime ?? '') || 0;
}

function restarts(p: any): number {
  let n = 0;
  for (const s of p.status?.containerStatuses ?? []) n += Number(s?.restartCount) || 0;
  return n;
}

/** kube's ControlleeExpectations: creations and deletions issued but not yet seen. */
interface Expectations {
  add: number;
  /** keys of the pods whose deletion is awaited */
  del: Set<string>;
  at: number;
}

export class ReplicaSetController {
  readonly rsT: ResourceTarget;
  readonly podsT: ResourceTarget;
  private expectations = new Map<string, Expectations>();
  private queue: KeyQueue;
  private stopped = false;
  /** the ReplicaSets' Events (kube's RealPodControl.Recorder) */
  private recorder: EventRecorder;

  constructor(
    private store: Store,
    private cacher: Cacher,
    targets: Targets,
  ) {
    this.recorder = new EventRecorder(store, targets.resolve('', 'v1', 'events')!, { component: 'replicaset-controller' });
    this.rsT = targets.resolve('apps', 'v1', 'replicasets')!;
    this.podsT = targets.resolve('', 'v1', 'pods')!;
    this.queue = new KeyQueue((k) => this.sync(k), WORKERS, (m) => console.warn(`W replicaset controller: ${m}`));
  }

  start(): void {
    this.cacher.observe((cache, evs) => this.onEvents(cache, evs));
    for (const e of this.store.cacheOf(this.rsT).items.values()) this.queue.add(e.key);
  }

  stop(): void {
    this.stopped = true;
    this.queue.stop();
    this.recorder.stop();
  }

  private event(rs: any, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const m = rs.metadata;
    this.recorder.event({ kind: 'ReplicaSet', apiVersion: 'apps/v1', namespace: m.namespace, name: m.name, uid: m.uid, resourceVersion: m.resourceVersion }, type, reason, message);
  }

  private onEvents(cache: ResourceCache, evs: WatchEvent[]): void {
    if (cache.gr === this.rsT.gr) {
      for (const ev of evs) {
        if (ev.type === 'DELETED') this.expectations.delete(ev.entry.key);
        this.queue.add(ev.entry.key);
      }
      return;
    }
    if (cache.gr !== this.podsT.gr) return;
    const sets = this.store.cacheOf(this.rsT);
    if (sets.items.size === 0 && this.expectations.size === 0) return;
    for (const ev of evs) this.onPod(ev, sets);
  }

  /** kube's addPod / updatePod / deletePod: expectations lowered, the owner (or candidates) queued. */
  private onPod(ev: WatchEvent, sets: ResourceCache): void {
    const pod = entryObject(ev.entry);
    const ns = ev.entry.ns;
    const ref = controllerRef(pod);
    const owner = ref?.kind === 'ReplicaSet' ? `${ns}/${ref.name}` : undefined;
    const prev = ev.prev ? entryObject(ev.prev) : undefined;
    const prevRef = prev ? controllerRef(prev) : undefined;
    const gone = ev.type === 'DELETED' || !!pod?.metadata?.deletionTimestamp;
    if (owner) {
      const x = this.expectations.get(owner);
      if (x) {
        if (ev.type === 'ADDED' && !gone) x.add--;
        if (gone) x.del.delete(ev.entry.key);
      }
      this.queue.add(owner);
    }
    if (prevRef && prevRef.kind === 'ReplicaSet' && prevRef.uid !== ref?.uid) this.queue.add(`${ns}/${prevRef.name}`);
    // An orphan: every ReplicaSet whose selector matches may adopt it.
    if (!ref && !gone) {
      for (const e of sets.list(ns)) if (workloadSelects(entryObject(e)?.spec?.selector, pod?.metadata?.labels)) this.queue.add(e.key);
    }
  }

  private satisfied(key: string): boolean {
    const x = this.expectations.get(key);
    if (!x) return true;
    if ((x.add <= 0 && x.del.size === 0) || Date.now() - x.at > EXPECTATIONS_TIMEOUT_MS) return true;
    return false;
  }

  /** kube's syncReplicaSet */
  private async sync(key: string): Promise<void> {
    if (this.stopped) return;
    const e = this.store.cacheOf(this.rsT).items.get(key);
    if (!e) {
      this.expectations.delete(key);
      return;
    }
    const rs = entryObject(e);
    const ns = e.ns;
    const needsSync = this.satisfied(key);
    const active = await this.claimPods(rs, ns);
    let failure: { reason: string; message: string } | undefined;
    if (needsSync && !rs.metadata.deletionTimestamp) {
      try {
        await this.manageReplicas(key, rs, ns, active);
      } catch (err) {
        if (!(err instanceof ManageError)) throw err;
        failure = { reason: err.reason, message: err.message };
      }
    }
    const cur = this.store.cacheOf(this.rsT).items.get(key);
    if (!cur || entryObject(cur).metadata.uid !== rs.metadata.uid) return;
    await this.updateStatus(cur, active, failure);
    if (failure) throw new Error(failure.message);
  }

  /**
   * kube's ClaimPods (PodControllerRefManager): the pods this ReplicaSet owns and still
   * selects, after adopting matching orphans and releasing owned pods it no longer selects.
   */
  private async claimPods(rs: any, ns: string): Promise<any[]> {
    const uid = rs.metadata.uid;
    const sel = rs.spec?.selector;
    const out: any[] = [];
    const writes: Promise<void>[] = [];
    for (const pe of this.store.cacheOf(this.podsT).list(ns)) {
      const pod = entryObject(pe);
      if (!podActive(pod)) continue; // kube claims from FilterActivePods
      const ref = controllerRef(pod);
      const matches = workloadSelects(sel, pod?.metadata?.labels);
      if (ref) {
        if (ref.uid !== uid) continue;
        if (matches) out.push(pod);
        else if (!rs.metadata.deletionTimestamp) writes.push(this.release(pe, uid));
        continue;
      }
      // An orphan: adopted unless it is being deleted or the ReplicaSet is.
      if (!matches || pod.metadata.deletionTimestamp || rs.metadata.deletionTimestamp) continue;
      writes.push(
        this.adopt(pe, rs).then(
          (p) => {
            if (p) out.push(p);
          },
          () => undefined,
        ),
      );
    }
    await Promise.all(writes);
    return out;
  }

  private async adopt(pe: CacheEntry, rs: any): Promise<any | undefined> {
    const ref: OwnerRef = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: rs.metadata.name, uid: rs.metadata.uid, controller: true, blockOwnerDeletion: true };
    const r = await this.store.guaranteedUpdate(this.podsT, pe.ns, pe.name, { dryRun: false, subresource: '' }, (obj) => {
      delete obj.metadata.resourceVersion;
      if (controllerRef(obj) || obj.metadata.deletionTimestamp) throw new AdoptionLost();
      obj.metadata.ownerReferences = [...(obj.metadata.ownerReferences ?? []), ref];
      return obj;
    });
    return JSON.parse(r.json.toString('utf8'));
  }

  private async release(pe: CacheEntry, uid: string): Promise<void> {
    await this.store
      .guaranteedUpdate(this.podsT, pe.ns, pe.name, { dryRun: false, subresource: '' }, (obj) => {
        delete obj.metadata.resourceVersion;
        const kept = (obj.metadata.ownerReferences ?? []).filter((r: any) => r?.uid !== uid);
        if (kept.length) obj.metadata.ownerReferences = kept;
        else delete obj.metadata.ownerReferences;
        return obj;
      })
      .catch((err) => {
        if (!(err instanceof StatusError && err.code === 404)) throw err;
      });
  }

  /** kube's manageReplicas: creates or deletes the difference, at most BURST_REPLICAS a sync. */
  private async manageReplicas(key: string, rs: any, ns: string, active: any[]): Promise<void> {
    const want = Number(rs.spec?.replicas ?? 1);
    const diff = active.length - want;
    if (diff < 0) {
      const n = Math.min(-diff, BURST_REPLICAS);
      const x: Expectations = { add: n, del: new Set(), at: Date.now() };
      this.expectations.set(key, x);
      const { created, error } = await slowStartBatch(n, SLOW_START_INITIAL_BATCH, () => this.createPod(rs, ns));
      // creations never attempted (or refused) will never be seen: stop waiting for them
      x.add -= n - created;
      if (error) throw new ManageError('FailedCreate', error.message);
      return;
    }
    if (diff > 0) {
      const n = Math.min(diff, BURST_REPLICAS);
      const victims = [...active].sort(deletionOrder).slice(0, n);
      const x: Expectations = { add: 0, del: new Set(victims.map((p) => `${ns}/${p.metadata.name}`)), at: Date.now() };
      this.expectations.set(key, x);
      const results = await Promise.allSettled(
        victims.map((p) =>
          this.store.delete(this.podsT, ns, p.metadata.name, { dryRun: false, preconditions: { uid: p.metadata.uid } }).then(
            () => this.event(rs, 'Normal', 'SuccessfulDelete', `Deleted pod: ${p.metadata.name}`),
            (err) => {
              x.del.delete(`${ns}/${p.metadata.name}`);
              if (err instanceof StatusError && err.code === 404) return;
              this.event(rs, 'Warning', 'FailedDelete', `Error deleting: ${(err as Error).message}`);
              throw err;
            },
          ),
        ),
      );
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw new ManageError('FailedDelete', (failed.reason as Error)?.message ?? String(failed.reason));
    }
  }

  /** kube's GetPodFromTemplate + CreatePodsWithGenerateName */
  private async createPod(rs: any, ns: string): Promise<void> {
    const tpl = rs.spec?.template ?? {};
    const meta = tpl.metadata ?? {};
    const pod: any = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        generateName: `${rs.metadata.name}-`,
        namespace: ns,
        ...(meta.labels ? { labels: structuredClone(meta.labels) } : {}),
        ...(meta.annotations ? { annotations: structuredClone(meta.annotations) } : {}),
        ...(meta.finalizers ? { finalizers: structuredClone(meta.finalizers) } : {}),
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: rs.metadata.name, uid: rs.metadata.uid, controller: true, blockOwnerDeletion: true }],
      },
      spec: structuredClone(tpl.spec ?? {}),
    };
    let made: any;
    try {
      made = JSON.parse((await this.store.create(this.podsT, ns, pod, { dryRun: false })).json.toString('utf8'));
    } catch (err) {
      // kube says nothing about a namespace being terminated: every create there fails
      const terminating = err instanceof StatusError && err.details?.causes?.some((c) => c.reason === 'NamespaceTerminating');
      if (!terminating) this.event(rs, 'Warning', 'FailedCreate', `Error creating: ${(err as Error).message}`);
      throw err;
    }
    this.event(rs, 'Normal', 'SuccessfulCreate', `Created pod: ${made.metadata.name}`);
  }

  /** kube's calculateStatus + updateReplicaSetStatus */
  private async updateStatus(e: CacheEntry, active: any[], failure: { reason: string; message: string } | undefined): Promise<void> {
    const rs = entryObject(e);
    const minReady = Number(rs.spec?.minReadySeconds ?? 0);
    const now = Date.now();
    const tplLabels: Record<string, string> = rs.spec?.template?.metadata?.labels ?? {};
    let fully = 0;
    let ready = 0;
    let available = 0;
    for (const p of active) {
      const l = p.metadata?.labels ?? {};
      if (Object.entries(tplLabels).every(([k, v]) => l[k] === v)) fully++;
      if (podReady(p)) ready++;
      if (podAvailable(p, minReady, now)) available++;
    }
    const old = rs.status ?? {};
    let conditions: any[] = Array.isArray(old.conditions) ? old.conditions.filter((c: any) => c?.type !== 'ReplicaFailure') : [];
    const had = (old.conditions ?? []).find((c: any) => c?.type === 'ReplicaFailure');
    if (failure) {
      const same = had && had.reason === failure.reason && had.message === failure.message;
      conditions.push(same ? had : { type: 'ReplicaFailure', status: 'True', lastTransitionTime: nowTimestamp(), reason: failure.reason, message: failure.message });
    }
    const status: any = { replicas: active.length };
    if (fully) status.fullyLabeledReplicas = fully;
    if (ready) status.readyReplicas = ready;
    if (available) status.availableReplicas = available;
    status.observedGeneration = rs.metadata.generation ?? 1;
    if (conditions.length) status.conditions = conditions;
    else conditions = [];
    if (!deepEqual(normalized(old), normalized(status))) {
      const obj = { ...rs, status };
      try {
        await this.store.update(this.rsT, e.ns, e.name, obj, { dryRun: false, subresource: 'status' });
      } catch (err) {
        if (err instanceof StatusError && err.code === 404) return;
        throw err;
      }
    }
    // kube requeues to see pods become available once minReadySeconds pass
    if (minReady > 0 && ready !== available) this.queue.addAfter(e.key, minReady * 1000);
  }
}

/** status with its zero counts left out (as the API serves it: omitempty) */
function normalized(s: any): any {
  const out: any = {};
  for (const [k, v] of Object.entries(s ?? {})) if (v !== 0 && v !== undefined) out[k] = v;
  return out;
}

class ManageError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

class AdoptionLost extends Error {}

/**
 * kube's slowStartBatch: calls fn count times, in batches of initial, 2x, 4x, ... run in
 * parallel, and stops after the first batch with a failure (a quota or admission refusal
 * then costs one call, not hundreds).
 */
export async function slowStartBatch(count: number, initial: number, fn: () => Promise<void>): Promise<{ created: number; error?: Error }> {
  let remaining = count;
  let created = 0;
  for (let batch = Math.min(remaining, initial); batch > 0; batch = Math.min(2 * batch, remaining)) {
    const results = await Promise.allSettled(Array.from({ length: batch }, () => fn()));
    let error: Error | undefined;
    for (const r of results) {
      if (r.status === 'fulfilled') created++;
      else error ??= r.reason as Error;
    }
    remaining -= batch;
    if (error) return { created, error };
  }
  return { created };
}
