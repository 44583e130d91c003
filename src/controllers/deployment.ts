// The Deployment controller (kube-controller-manager's deployment controller, in process and
// leader-elected): every Deployment is rolled out through ReplicaSets named
// <deployment>-<pod-template-hash>, one per distinct pod template, with the
// RollingUpdate (maxSurge, maxUnavailable) or Recreate strategy; revisions, desired and max
// replicas annotations; status with the Available, Progressing and ReplicaFailure
// conditions; proportional scaling of a rollout in progress; pause; cleanup of old
// ReplicaSets beyond revisionHistoryLimit.
//
// Mirrors pkg/controller/deployment: deployment_controller.go (syncDeployment, the adoption
// of ReplicaSets), sync.go (getNewReplicaSet, scale, cleanupDeployment, calculateStatus),
// rolling.go, recreate.go and progress.go (syncRolloutStatus), and deployment/util.
// Events on the Deployment as kube's, from the component "deployment-controller":
// ScalingReplicaSet ("Scaled up replica set X from 0 to 3", "Scaled down ... from 3 to 1"),
// ReplicaSetCreateError, SelectingAll.
//
// Thread ownership: the main thread. Driven by the cache layer's committed batches
// (Cacher.observe) through a KeyQueue of "<namespace>/<name>" Deployments; reads come from the
// watch caches, writes go through the generic store like any client's.
import type { Cacher } from '../storage/cacher.js';
import type { Targets } from '../api/targets.js';
import { StatusError } from '../errors.js';
import { entryObject, type ResourceCache, type WatchEvent } from '../../workers/watch/watch-cache.js';
import { nowTimestamp, type ResourceTarget, type Store } from '../registry/store.js';
import { deepEqual } from '../registry/managed-fields.js';
import { EventRecorder } from './event-recorder.js';
import { KeyQueue } from './key-queue.js';
import { controllerRef, workloadSelects } from './replicaset.js';

export const REVISION = 'deployment.kubernetes.io/revision';
export const REVISION_HISTORY = 'deployment.kubernetes.io/revision-history';
export const DESIRED_REPLICAS = 'deployment.kubernetes.io/desired-replicas';
export const MAX_REPLICAS = 'deployment.kubernetes.io/max-replicas';
export const POD_TEMPLATE_HASH = 'pod-template-hash';
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
/** annotations of a Deployment that its ReplicaSets do not copy (kube's skipCopyAnnotation) */
const NOT_COPIED = new Set([LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS]);
const MAX_INT32 = 2 ** 31 - 1;
const WORKERS = 5;

type RS = any;
type Deployment = any;

// ------------------------------------------------------------------ pure helpers (deployment/util)

/** kube's rand.SafeEncodeString alphabet: no vowels, no look-alike digits */
const SAFE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/**
 * The pod-template-hash of a template (kube's controller.ComputeHash: a 32-bit FNV-1a of the
 * template, and of collisionCount when set, its decimal form spelled in the safe alphabet).
 * kube hashes Go's printed form of the struct; this hashes the canonical JSON: the values
 * differ from kube's, the properties (stable for a template, changed by a collision) do not.
 */
export function computeHash(template: unknown, collisionCount?: number): string {
  let h = 0x811c9dc5;
  const feed = (s: string) => {
    const b = Buffer.from(s, 'utf8');
    for (let i = 0; i < b.length; i++) {
      h ^= b[i];
      h = Math.imul(h, 0x01000193) >>> 0;
    }
  };
  feed(canonicalJson(template));
  if (collisionCount !== undefined && collisionCount !== null) {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(collisionCount >>> 0);
    feed(b.toString('latin1'));
  }
  return [...String(h >>> 0)].map((c) => SAFE_ALPHABET[c.charCodeAt(0) % SAFE_ALPHABET.length]).join('');
}

function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as any)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** kube's EqualIgnoreHash: two templates equal but for the pod-template-hash label */
export function equalIgnoreHash(a: any, b: any): boolean {
  const strip = (t: any) => {
    const c = structuredClone(t ?? {});
    if (c.metadata?.labels) {
      delete c.metadata.labels[POD_TEMPLATE_HASH];
      if (Object.keys(c.metadata.labels).length === 0) delete c.metadata.labels;
    }
    return c;
  };
  return deepEqual(strip(a), strip(b));
}

/** kube's intstr.GetScaledValueFromIntOrPercent */
function scaled(v: unknown, total: number, roundUp: boolean): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    const m = /^(\d+)%$/.exec(v);
    if (m) {
      const x = (Number(m[1]) * total) / 100;
      return roundUp ? Math.ceil(x) : Math.floor(x);
    }
    const n = Number(v);
    if (Number.isInteger(n)) return n;
  }
  return 0;
}

function replicasOf(d: Deployment): number {
  return Number(d.spec?.replicas ?? 1);
}

function isRolling(d: Deployment): boolean {
  return (d.spec?.strategy?.type ?? 'RollingUpdate') === 'RollingUpdate';
}

/** kube's ResolveFenceposts: maxSurge rounded up, maxUnavailable down, never both zero */
export function resolveFenceposts(maxSurge: unknown, maxUnavailable: unknown, desired: number): [number, number] {
  const surge = scaled(maxSurge ?? '25%', desired, true);
  let unavailable = scaled(maxUnavailable ?? '25%', desired, false);
  if (surge === 0 && unavailable === 0) unavailable = 1;
  return [surge, unavailable];
}

function maxSurge(d: Deployment): number {
  if (!isRolling(d)) return 0;
  const ru = d.spec?.strategy?.rollingUpdate ?? {};
  return resolveFenceposts(ru.maxSurge, ru.maxUnavailable, replicasOf(d))[0];
}

/** kube's MaxUnavailable */
function maxUnavailable(d: Deployment): number {
  const n = replicasOf(d);
  if (!isRolling(d) || n === 0) return 0;
  const ru = d.spec?.strategy?.rollingUpdate ?? {};
  return Math.min(n, resolveFenceposts(ru.maxSurge, ru.maxUnavailable, n)[1]);
}

const specReplicas = (rs: RS | undefined): number => Number(rs?.spec?.replicas ?? 0);
const sumSpec = (l: RS[]) => l.reduce((s, rs) => s + specReplicas(rs), 0);
const sumStatus = (l: RS[], f: string) => l.reduce((s, rs) => s + Number(rs?.status?.[f] ?? 0), 0);
const created = (o: any) => Date.parse(o?.metadata?.creationTimestamp ?? '') || 0;
/** kube's ReplicaSetsByCreationTimestamp: oldest first, then by name */
const byCreation = (a: RS, b: RS) => created(a) - created(b) || String(a.metadata.name).localeCompare(b.metadata.name);
export function revisionOf(o: any): number {
  const v = Number(o?.metadata?.annotations?.[REVISION]);
  return Number.isInteger(v) ? v : 0;
}

function annotationInt(rs: RS, key: string): number | undefined {
  const s = rs?.metadata?.annotations?.[key];
  if (s === undefined) return undefined;
  const v = Number(s);
  return Number.isInteger(v) ? v : undefined;
}

function hasProgressDeadline(d: Deployment): boolean {
  const p = d.spec?.progressDeadlineSeconds;
  return p !== undefined && p !== null && p !== MAX_INT32;
}

function condition(status: any, type: string): any | undefined {
  return (status?.conditions ?? []).find((c: any) => c?.type === type);
}

function newCondition(type: string, status: string, reason: string, message: string): any {
  const now = nowTimestamp();
  return { type, status, lastUpdateTime: now, lastTransitionTime: now, reason, message };
}

/** kube's SetDeploymentCondition: an unchanged status and reason keeps the condition as it is */
function setCondition(status: any, c: any): void {
  const cur = condition(status, c.type);
  if (cur && cur.status === c.status && cur.reason === c.reason) return;
  if (cur && cur.status === c.status) c.lastTransitionTime = cur.lastTransitionTime;
  status.conditions = [...(status.conditions ?? []).filter((x: any) => x?.type !== c.type), c];
}

function removeCondition(status: any, type: string): void {
  if (!status.conditions) return;
  status.conditions = status.conditions.filter((x: any) => x?.type !== type);
  if (status.conditions.length === 0) delete status.conditions;
}

/** kube's DeploymentComplete */
function deploymentComplete(d: Deployment, s: any): boolean {
  const n = replicasOf(d);
  return (s?.updatedReplicas ?? 0) === n && (s?.replicas ?? 0) === n && (s?.availableReplicas ?? 0) === n && (s?.observedGeneration ?? 0) >= (d.metadata.generation ?? 0);
}

/** kube's DeploymentProgressing: more updated, ready or available pods, or fewer old ones */
function deploymentProgressing(d: Deployment, s: any): boolean {
  const o = d.status ?? {};
  const oldOld = (o.replicas ?? 0) - (o.updatedReplicas ?? 0);
  const newOld = (s.replicas ?? 0) - (s.updatedReplicas ?? 0);
  return (s.updatedReplicas ?? 0) > (o.updatedReplicas ?? 0) || newOld < oldOld || (s.readyReplicas ?? 0) > (o.readyReplicas ?? 0) || (s.availableReplicas ?? 0) > (o.availableReplicas ?? 0);
}

/** kube's DeploymentTimedOut */
function deploymentTimedOut(d: Deployment, s: any): boolean {
  if (!hasProgressDeadline(d)) return false;
  const c = condition(s, 'Progressing');
  if (!c || c.reason === 'NewReplicaSetAvailable') return false;
  if (c.reason === 'ProgressDeadlineExceeded') return true;
  const from = Date.parse(c.lastUpdateTime ?? '');
  return Number.isFinite(from) && Date.now() > from + d.spec.progressDeadlineSeconds * 1000;
}

// ------------------------------------------------------------------ the controller

export class DeploymentController {
  readonly dT: ResourceTarget;
  readonly rsT: ResourceTarget;
  readonly podsT: ResourceTarget;
  /** the Deployment's Events (kube's eventRecorder of the deployment controller) */
  readonly recorder: EventRecorder;
  private queue: KeyQueue;
  private stopped = false;

  constructor(
    private store: Store,
    private cacher: Cacher,
    targets: Targets,
  ) {
    this.recorder = new EventRecorder(store, targets.resolve('', 'v1', 'events')!, { component: 'deployment-controller' });
    this.dT = targets.resolve('apps', 'v1', 'deployments')!;
    this.rsT = targets.resolve('apps', 'v1', 'replicasets')!;
    this.podsT = targets.resolve('', 'v1', 'pods')!;
    this.queue = new KeyQueue((k) => this.sync(k), WORKERS, (m) => console.warn(`W deployment controller: ${m}`));
  }

  start(): void {
    this.cacher.observe((cache, evs) => this.onEvents(cache, evs));
    for (const e of this.store.cacheOf(this.dT).items.values()) this.queue.add(e.key);
  }

  stop(): void {
    this.stopped = true;
    this.queue.stop();
    this.recorder.stop();
  }

  private onEvents(cache: ResourceCache, evs: WatchEvent[]): void {
    if (cache.gr === this.dT.gr) {
      for (const ev of evs) this.queue.add(ev.entry.key);
      return;
    }
    const deployments = this.store.cacheOf(this.dT);
    if (deployments.items.size === 0) return;
    if (cache.gr === this.rsT.gr) {
      for (const ev of evs) {
        const rs = entryObject(ev.entry);
        const ref = controllerRef(rs);
        if (ref?.kind === 'Deployment') this.queue.add(`${ev.entry.ns}/${ref.name}`);
        const prevRef = ev.prev ? controllerRef(entryObject(ev.prev)) : undefined;
        if (prevRef?.kind === 'Deployment' && prevRef.uid !== ref?.uid) this.queue.add(`${ev.entry.ns}/${prevRef.name}`);
        if (!ref && ev.type !== 'DELETED') {
          for (const de of deployments.list(ev.entry.ns)) if (workloadSelects(entryObject(de)?.spec?.selector, rs?.metadata?.labels)) this.queue.add(de.key);
        }
      }
      return;
    }
    if (cache.gr === this.podsT.gr) {
      // kube's deletePod: a Recreate rollout waits for the old pods to be gone
      const sets = this.store.cacheOf(this.rsT);
      for (const ev of evs) {
        if (ev.type !== 'DELETED') continue;
        const ref = controllerRef(entryObject(ev.entry));
        if (ref?.kind !== 'ReplicaSet') continue;
        const rse = sets.items.get(`${ev.entry.ns}/${ref.name}`);
        const dref = rse ? controllerRef(entryObject(rse)) : undefined;
        if (dref?.kind !== 'Deployment') continue;
        const de = deployments.items.get(`${ev.entry.ns}/${dref.name}`);
        if (de && entryObject(de)?.spec?.strategy?.type === 'Recreate') this.queue.add(de.key);
      }
    }
  }

  /** kube's syncDeployment */
  private async sync(key: string): Promise<void> {
    if (this.stopped) return;
    const e = this.store.cacheOf(this.dT).items.get(key);
    if (!e) return;
    const ctx = new SyncContext(this, structuredClone(entryObject(e)), e.ns);
    const d = ctx.d;
    if (!d.spec?.selector || (Object.keys(d.spec.selector.matchLabels ?? {}).length === 0 && (d.spec.selector.matchExpressions ?? []).length === 0)) {
      // kube: an empty selector selects nothing; only the observed generation moves
      ctx.event('Warning', 'SelectingAll', 'This deployment is selecting all pods. A non-empty selector is required.');
      if ((d.status?.observedGeneration ?? 0) < (d.metadata.generation ?? 0)) await ctx.writeStatus({ ...(d.status ?? {}), observedGeneration: d.metadata.generation });
      return;
    }
    const rsList = await ctx.claimReplicaSets();
    if (d.metadata.deletionTimestamp) return ctx.syncStatusOnly(rsList);
    await ctx.checkPausedConditions();
    if (d.spec.paused) return ctx.syncScale(rsList);
    if (await ctx.isScalingEvent(rsList)) return ctx.syncScale(rsList);
    if (d.spec.strategy?.type === 'Recreate') return ctx.rolloutRecreate(rsList);
    return ctx.rolloutRolling(rsList);
  }

  /** Deployments are looked at again later (kube's AddAfter). */
  requeue(key: string, ms: number): void {
    this.queue.addAfter(key, ms);
  }

  get storeRef(): Store {
    return this.store;
  }
}

/** One sync of one Deployment: the Deployment as this sync last wrote it, and the writes. */
class SyncContext {
  constructor(
    private c: DeploymentController,
    public d: Deployment,
    private ns: string,
  ) {}

  private get store(): Store {
    return this.c.storeRef;
  }

  private get key(): string {
    return `${this.ns}/${this.d.metadata.name}`;
  }

  /** An Event about the Deployment (kube's dc.eventRecorder.Eventf(d, ...)). */
  event(type: 'Normal' | 'Warning', reason: string, message: string): void {
    const m = this.d.metadata;
    this.c.recorder.event({ kind: 'Deployment', apiVersion: 'apps/v1', namespace: this.ns, name: m.name, uid: m.uid, resourceVersion: m.resourceVersion }, type, reason, message);
  }

  // ---------------------------------------------------------------- writes

  async writeStatus(status: any): Promise<void> {
    const r = await this.store.update(this.c.dT, this.ns, this.d.metadata.name, { ...this.d, status }, { dryRun: false, subresource: 'status' });
    this.d = JSON.parse(r.json.toString('utf8'));
  }

  /** The Deployment's revision annotation (kube's SetDeploymentRevision, written with the object). */
  private async writeRevision(revision: string): Promise<void> {
    if (this.d.metadata.annotations?.[REVISION] === revision) return;
    const r = await this.store.guaranteedUpdate(this.c.dT, this.ns, this.d.metadata.name, { dryRun: false, subresource: '' }, (obj) => {
      if (obj.metadata.uid !== this.d.metadata.uid) throw new Error('deployment replaced');
      delete obj.metadata.resourceVersion;
      obj.metadata.annotations = { ...(obj.metadata.annotations ?? {}), [REVISION]: revision };
      return obj;
    });
    const fresh = JSON.parse(r.json.toString('utf8'));
    // the spec this sync works from stays; only the version and the annotations move
    this.d.metadata.resourceVersion = fresh.metadata.resourceVersion;
    this.d.metadata.annotations = fresh.metadata.annotations;
  }

  private async writeRs(rs: RS): Promise<RS> {
    const r = await this.store.update(this.c.rsT, this.ns, rs.metadata.name, rs, { dryRun: false, subresource: '' });
    return JSON.parse(r.json.toString('utf8'));
  }

  // ---------------------------------------------------------------- adoption

  /** kube's getReplicaSetsForDeployment (ReplicaSetControllerRefManager.ClaimReplicaSets) */
  async claimReplicaSets(): Promise<RS[]> {
    const d = this.d;
    const out: RS[] = [];
    for (const e of this.store.cacheOf(this.c.rsT).list(this.ns)) {
      const rs = entryObject(e);
      const ref = controllerRef(rs);
      const matches = workloadSelects(d.spec.selector, rs?.metadata?.labels);
      if (ref) {
        if (ref.uid !== d.metadata.uid) continue;
        if (matches) out.push(structuredClone(rs));
        else if (!d.metadata.deletionTimestamp) await this.setOwner(rs, false).catch(() => undefined);
        continue;
      }
      if (!matches || rs.metadata.deletionTimestamp || d.metadata.deletionTimestamp) continue;
      const adopted = await this.setOwner(rs, true).catch(() => undefined);
      if (adopted) out.push(adopted);
    }
    return out;
  }

  private async setOwner(rs: RS, adopt: boolean): Promise<RS | undefined> {
    const d = this.d;
    const r = await this.store.guaranteedUpdate(this.c.rsT, this.ns, rs.metadata.name, { dryRun: false, subresource: '' }, (obj) => {
      delete obj.metadata.resourceVersion;
      const refs = obj.metadata.ownerReferences ?? [];
      if (adopt) {
        if (controllerRef(obj) || obj.metadata.uid !== rs.metadata.uid) throw new Error('adoption lost');
        obj.metadata.ownerReferences = [...refs, { apiVersion: 'apps/v1', kind: 'Deployment', name: d.metadata.name, uid: d.metadata.uid, controller: true, blockOwnerDeletion: true }];
      } else {
        const kept = refs.filter((r: any) => r?.uid !== d.metadata.uid);
        if (kept.length) obj.metadata.ownerReferences = kept;
        else delete obj.metadata.ownerReferences;
      }
      return obj;
    });
    return JSON.parse(r.json.toString('utf8'));
  }

  // ---------------------------------------------------------------- new and old ReplicaSets

  /** kube's getAllReplicaSetsAndSyncRevision */
  async allAndSyncRevision(rsList: RS[], create: boolean): Promise<{ newRS: RS | undefined; oldRSs: RS[] }> {
    const found = [...rsList].sort(byCreation).find((rs) => equalIgnoreHash(rs.spec?.template, this.d.spec.template));
    const oldRSs = rsList.filter((rs) => rs !== found);
    const newRS = await this.newReplicaSet(found, oldRSs, create);
    return { newRS, oldRSs };
  }

  /** kube's getNewReplicaSet */
  private async newReplicaSet(existing: RS | undefined, oldRSs: RS[], create: boolean): Promise<RS | undefined> {
    const d = this.d;
    const newRevision = String(Math.max(0, ...oldRSs.map(revisionOf)) + 1);
    if (existing) {
      const copy = structuredClone(existing);
      const annotationsChanged = this.setNewRsAnnotations(copy, newRevision, true);
      const minReady = d.spec.minReadySeconds ?? 0;
      if (annotationsChanged || (copy.spec.minReadySeconds ?? 0) !== minReady) {
        copy.spec.minReadySeconds = minReady;
        const written = await this.writeRs(copy);
        Object.assign(existing, written);
        return existing;
      }
      await this.writeRevision(copy.metadata.annotations?.[REVISION] ?? newRevision);
      if (hasProgressDeadline(d) && !condition(this.d.status, 'Progressing')) {
        const status = structuredClone(this.d.status ?? {});
        setCondition(status, newCondition('Progressing', 'True', 'FoundNewReplicaSet', `Found new replica set "${existing.metadata.name}"`));
        await this.writeStatus(status);
      }
      return existing;
    }
    if (!create) return undefined;
    const collisionCount: number | undefined = d.status?.collisionCount;
    const hash = computeHash(d.spec.template, collisionCount);
    const template = structuredClone(d.spec.template ?? {});
    template.metadata = { ...(template.metadata ?? {}), labels: { ...(template.metadata?.labels ?? {}), [POD_TEMPLATE_HASH]: hash } };
    const selector = structuredClone(d.spec.selector);
    selector.matchLabels = { ...(selector.matchLabels ?? {}), [POD_TEMPLATE_HASH]: hash };
    const rs: RS = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: `${d.metadata.name}-${hash}`,
        namespace: this.ns,
        labels: template.metadata.labels,
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: d.metadata.name, uid: d.metadata.uid, controller: true, blockOwnerDeletion: true }],
      },
      spec: { replicas: 0, minReadySeconds: d.spec.minReadySeconds ?? 0, selector, template },
    };
    rs.spec.replicas = this.newRsReplicas([...oldRSs, rs], rs);
    this.setNewRsAnnotations(rs, newRevision, false);
    let made: RS;
    try {
      const r = await this.store.create(this.c.rsT, this.ns, structuredClone(rs), { dryRun: false });
      made = JSON.parse(r.json.toString('utf8'));
    } catch (err) {
      if (!(err instanceof StatusError && err.code === 409)) {
        this.event('Warning', 'ReplicaSetCreateError', `Failed to create new replica set "${rs.metadata.name}": ${(err as Error).message}`);
        throw err;
      }
      // kube: the name is taken. Ours already (a cache behind our own create): use it; anything
      // else is a hash collision, resolved by a new collisionCount and a new hash.
      const e = this.store.cacheOf(this.c.rsT).items.get(`${this.ns}/${rs.metadata.name}`);
      const other = e ? entryObject(e) : undefined;
      if (other && controllerRef(other)?.uid === d.metadata.uid && equalIgnoreHash(other.spec?.template, d.spec.template)) return structuredClone(other);
      const status = structuredClone(this.d.status ?? {});
      status.collisionCount = (collisionCount ?? 0) + 1;
      await this.writeStatus(status);
      throw new Error(`hash collision for ReplicaSet "${rs.metadata.name}": collisionCount now ${status.collisionCount}`);
    }
    if (specReplicas(made) > 0) this.event('Normal', 'ScalingReplicaSet', `Scaled up replica set ${made.metadata.name} from 0 to ${specReplicas(made)}`);
    await this.writeRevision(newRevision);
    if (hasProgressDeadline(d)) {
      const status = structuredClone(this.d.status ?? {});
      setCondition(status, newCondition('Progressing', 'True', 'NewReplicaSetCreated', `Created new replica set "${made.metadata.name}"`));
      await this.writeStatus(status);
    }
    return made;
  }

  /** kube's SetNewReplicaSetAnnotations; whether anything changed */
  private setNewRsAnnotations(rs: RS, newRevision: string, exists: boolean): boolean {
    const d = this.d;
    const a: Record<string, string> = (rs.metadata.annotations ??= {});
    let changed = false;
    for (const [k, v] of Object.entries<string>(d.metadata.annotations ?? {})) {
      if (NOT_COPIED.has(k) || a[k] === v) continue;
      a[k] = v;
      changed = true;
    }
    const oldRevision = a[REVISION];
    const oldN = Number(oldRevision ?? 0);
    if (!(Number.isInteger(oldN) && oldN >= Number(newRevision))) {
      a[REVISION] = newRevision;
      changed = true;
    }
    if (!exists) {
      const n = replicasOf(d);
      if (this.setReplicasAnnotations(rs, n, n + maxSurge(d))) changed = true;
    }
    return changed;
  }

  private setReplicasAnnotations(rs: RS, desired: number, max: number): boolean {
    const a: Record<string, string> = (rs.metadata.annotations ??= {});
    let changed = false;
    if (a[DESIRED_REPLICAS] !== String(desired)) {
      a[DESIRED_REPLICAS] = String(desired);
      changed = true;
    }
    if (a[MAX_REPLICAS] !== String(max)) {
      a[MAX_REPLICAS] = String(max);
      changed = true;
    }
    return changed;
  }

  /** kube's NewRSNewReplicas */
  private newRsReplicas(all: RS[], newRS: RS): number {
    const d = this.d;
    if (!isRolling(d)) return replicasOf(d);
    const maxTotal = replicasOf(d) + maxSurge(d);
    const current = sumSpec(all);
    if (current >= maxTotal) return specReplicas(newRS);
    const up = Math.min(maxTotal - current, replicasOf(d) - specReplicas(newRS));
    return specReplicas(newRS) + up;
  }

  /** kube's scaleReplicaSet: replicas and the replicas annotations; whether the size changed */
  private async scaleRs(rs: RS, n: number): Promise<boolean> {
    const d = this.d;
    const sizeChanged = specReplicas(rs) !== n;
    const copy = structuredClone(rs);
    const annotationsChanged = this.setReplicasAnnotations(copy, replicasOf(d), replicasOf(d) + maxSurge(d));
    if (!sizeChanged && !annotationsChanged) return false;
    const from = specReplicas(rs);
    copy.spec.replicas = n;
    const written = await this.writeRs(copy);
    if (sizeChanged) this.event('Normal', 'ScalingReplicaSet', `Scaled ${from < n ? 'up' : 'down'} replica set ${written.metadata.name} from ${from} to ${n}`);
    for (const k of Object.keys(rs)) delete rs[k];
    Object.assign(rs, written);
    return sizeChanged;
  }

  /** kube's scaleReplicaSetAndRecordEvent */
  private async scaleTo(rs: RS, n: number): Promise<boolean> {
    if (specReplicas(rs) === n) return false;
    return this.scaleRs(rs, n);
  }

  // ---------------------------------------------------------------- sync (scaling, paused)

  async checkPausedConditions(): Promise<void> {
    const d = this.d;
    if (!hasProgressDeadline(d)) return;
    const c = condition(d.status, 'Progressing');
    if (c?.reason === 'ProgressDeadlineExceeded') return;
    const pausedCond = c?.reason === 'DeploymentPaused';
    const status = structuredClone(d.status ?? {});
    if (d.spec.paused && !pausedCond) setCondition(status, newCondition('Progressing', 'Unknown', 'DeploymentPaused', 'Deployment is paused'));
    else if (!d.spec.paused && pausedCond) setCondition(status, newCondition('Progressing', 'Unknown', 'DeploymentResumed', 'Deployment is resumed'));
    else return;
    await this.writeStatus(status);
  }

  /** kube's isScalingEvent */
  async isScalingEvent(rsList: RS[]): Promise<boolean> {
    const { newRS, oldRSs } = await this.allAndSyncRevision(rsList, false);
    for (const rs of [...oldRSs, ...(newRS ? [newRS] : [])]) {
      if (specReplicas(rs) <= 0) continue;
      const desired = annotationInt(rs, DESIRED_REPLICAS);
      if (desired !== undefined && desired !== replicasOf(this.d)) return true;
    }
    return false;
  }

  /** kube's sync: scale, clean up when paused, status */
  async syncScale(rsList: RS[]): Promise<void> {
    const { newRS, oldRSs } = await this.allAndSyncRevision(rsList, false);
    await this.scale(newRS, oldRSs);
    if (this.d.spec.paused) await this.cleanup(oldRSs);
    await this.syncStatus([...oldRSs, ...(newRS ? [newRS] : [])], newRS);
  }

  /** kube's scale: one active ReplicaSet takes the size; otherwise proportional scaling */
  private async scale(newRS: RS | undefined, oldRSs: RS[]): Promise<void> {
    const d = this.d;
    const n = replicasOf(d);
    const activeOrLatest = findActiveOrLatest(newRS, oldRSs);
    if (activeOrLatest) {
      await this.scaleTo(activeOrLatest, n);
      return;
    }
    if (isSaturated(d, newRS)) {
      for (const rs of oldRSs.filter((r) => specReplicas(r) > 0)) await this.scaleTo(rs, 0);
      return;
    }
    if (!isRolling(d)) return;
    const all = [...oldRSs, ...(newRS ? [newRS] : [])].filter((r) => specReplicas(r) > 0);
    const allowed = n > 0 ? n + maxSurge(d) : 0;
    const toAdd = allowed - sumSpec(all);
    if (toAdd === 0) return;
    // kube's ReplicaSetsBySizeNewer (scaling up) or BySizeOlder (down): larger first
    all.sort((a, b) => specReplicas(b) - specReplicas(a) || (toAdd > 0 ? created(b) - created(a) : created(a) - created(b)));
    const size = new Map<RS, number>();
    let added = 0;
    for (const rs of all) {
      const p = this.proportion(rs, toAdd, added);
      size.set(rs, specReplicas(rs) + p);
      added += p;
    }
    const leftover = toAdd - added;
    if (leftover !== 0 && all.length) size.set(all[0], Math.max(0, size.get(all[0])! + leftover));
    for (const rs of all) await this.scaleRs(rs, Math.max(0, size.get(rs)!));
  }

  /** kube's GetProportion and getReplicaSetFraction */
  private proportion(rs: RS, toAdd: number, added: number): number {
    const d = this.d;
    if (specReplicas(rs) === 0 || toAdd === 0 || toAdd === added) return 0;
    let fraction: number;
    if (replicasOf(d) === 0) fraction = -specReplicas(rs);
    else {
      const deploymentReplicas = replicasOf(d) + maxSurge(d);
      const annotated = annotationInt(rs, MAX_REPLICAS) ?? Number(d.status?.replicas ?? 0);
      fraction = annotated > 0 ? Math.round((specReplicas(rs) * deploymentReplicas) / annotated) - specReplicas(rs) : 0;
    }
    const allowed = toAdd - added;
    return toAdd > 0 ? Math.min(fraction, allowed) : Math.max(fraction, allowed);
  }

  /** kube's cleanupDeployment: old ReplicaSets beyond revisionHistoryLimit, emptied ones only */
  private async cleanup(oldRSs: RS[]): Promise<void> {
    const limit = this.d.spec.revisionHistoryLimit;
    if (limit === undefined || limit === null) return;
    const alive = oldRSs.filter((rs) => !rs.metadata.deletionTimestamp);
    const diff = alive.length - limit;
    if (diff <= 0) return;
    alive.sort((a, b) => revisionOf(a) - revisionOf(b) || byCreation(a, b));
    for (let i = 0; i < diff; i++) {
      const rs = alive[i];
      if (Number(rs.status?.replicas ?? 0) !== 0 || specReplicas(rs) !== 0 || (rs.metadata.generation ?? 0) > (rs.status?.observedGeneration ?? 0)) continue;
      await this.store
        .delete(this.c.rsT, this.ns, rs.metadata.name, { dryRun: false, preconditions: { uid: rs.metadata.uid } })
        .catch((err) => {
          if (!(err instanceof StatusError && err.code === 404)) throw err;
        });
    }
  }

  // ---------------------------------------------------------------- status

  /** kube's calculateStatus */
  private calculateStatus(all: RS[], newRS: RS | undefined): any {
    const d = this.d;
    const available = sumStatus(all, 'availableReplicas');
    const status: any = {
      observedGeneration: d.metadata.generation ?? 1,
      replicas: sumStatus(all, 'replicas'),
      updatedReplicas: newRS ? Number(newRS.status?.replicas ?? 0) : 0,
      readyReplicas: sumStatus(all, 'readyReplicas'),
      availableReplicas: available,
      unavailableReplicas: Math.max(0, sumSpec(all) - available),
    };
    if (d.status?.collisionCount !== undefined) status.collisionCount = d.status.collisionCount;
    if (d.status?.conditions) status.conditions = structuredClone(d.status.conditions);
    if (available >= replicasOf(d) - maxUnavailable(d)) setCondition(status, newCondition('Available', 'True', 'MinimumReplicasAvailable', 'Deployment has minimum availability.'));
    else setCondition(status, newCondition('Available', 'False', 'MinimumReplicasUnavailable', 'Deployment does not have minimum availability.'));
    return status;
  }

  /** kube's syncDeploymentStatus */
  private async syncStatus(all: RS[], newRS: RS | undefined): Promise<void> {
    const status = this.calculateStatus(all, newRS);
    if (statusEqual(this.d.status, status)) return;
    await this.writeStatus(status);
  }

  async syncStatusOnly(rsList: RS[]): Promise<void> {
    const { newRS, oldRSs } = await this.allAndSyncRevision(rsList, false);
    await this.syncStatus([...oldRSs, ...(newRS ? [newRS] : [])], newRS);
  }

  /** kube's syncRolloutStatus (progress.go) */
  private async syncRolloutStatus(all: RS[], newRS: RS | undefined): Promise<void> {
    const d = this.d;
    const status = this.calculateStatus(all, newRS);
    if (!hasProgressDeadline(d)) removeCondition(status, 'Progressing');
    const cur = condition(status, 'Progressing');
    const complete = status.replicas === status.updatedReplicas && cur?.reason === 'NewReplicaSetAvailable';
    if (hasProgressDeadline(d) && !complete) {
      const name = newRS?.metadata?.name ?? '';
      if (deploymentComplete(d, status)) {
        setCondition(status, newCondition('Progressing', 'True', 'NewReplicaSetAvailable', `ReplicaSet "${name}" has successfully progressed.`));
      } else if (deploymentProgressing(d, status)) {
        // every sight of progress refreshes lastUpdateTime (the deadline counts from there)
        const c = newCondition('Progressing', 'True', 'ReplicaSetUpdated', `ReplicaSet "${name}" is progressing.`);
        if (cur?.status === 'True') c.lastTransitionTime = cur.lastTransitionTime;
        removeCondition(status, 'Progressing');
        setCondition(status, c);
      } else if (deploymentTimedOut(d, status)) {
        setCondition(status, newCondition('Progressing', 'False', 'ProgressDeadlineExceeded', `ReplicaSet "${name}" has timed out progressing.`));
      }
    }
    const failure = condition(newRS?.status, 'ReplicaFailure');
    if (failure) {
      const c = newCondition('ReplicaFailure', failure.status, failure.reason, failure.message);
      c.lastTransitionTime = failure.lastTransitionTime ?? c.lastTransitionTime;
      setCondition(status, c);
    } else removeCondition(status, 'ReplicaFailure');
    if (statusEqual(d.status, status)) {
      this.requeueStuck(status);
      return;
    }
    await this.writeStatus(status);
    this.requeueStuck(status);
  }

  /** kube's requeueStuckDeployment: look again when the progress deadline would pass */
  private requeueStuck(status: any): void {
    const d = this.d;
    const c = condition(status, 'Progressing');
    if (!hasProgressDeadline(d) || !c || c.reason === 'NewReplicaSetAvailable' || c.reason === 'ProgressDeadlineExceeded' || deploymentComplete(d, status)) return;
    const from = Date.parse(c.lastUpdateTime ?? '');
    if (!Number.isFinite(from)) return;
    const after = from + d.spec.progressDeadlineSeconds * 1000 - Date.now();
    this.c.requeue(this.key, Math.max(1000, after + 1000));
  }

  // ---------------------------------------------------------------- strategies

  /** kube's rolloutRolling */
  async rolloutRolling(rsList: RS[]): Promise<void> {
    const { newRS, oldRSs } = await this.allAndSyncRevision(rsList, true);
    const all = [...oldRSs, ...(newRS ? [newRS] : [])];
    if (newRS && (await this.reconcileNew(all, newRS))) return this.syncRolloutStatus(all, newRS);
    if (newRS && (await this.reconcileOld(all, oldRSs.filter((r) => specReplicas(r) > 0), newRS))) return this.syncRolloutStatus(all, newRS);
    if (deploymentComplete(this.d, this.d.status)) await this.cleanup(oldRSs);
    return this.syncRolloutStatus(all, newRS);
  }

  /** kube's reconcileNewReplicaSet */
  private async reconcileNew(all: RS[], newRS: RS): Promise<boolean> {
    const n = replicasOf(this.d);
    if (specReplicas(newRS) === n) return false;
    if (specReplicas(newRS) > n) return this.scaleTo(newRS, n);
    return this.scaleTo(newRS, this.newRsReplicas(all, newRS));
  }

  /** kube's reconcileOldReplicaSets */
  private async reconcileOld(all: RS[], oldActive: RS[], newRS: RS): Promise<boolean> {
    const d = this.d;
    if (sumSpec(oldActive) === 0) return false;
    const minAvailable = replicasOf(d) - maxUnavailable(d);
    const newUnavailable = specReplicas(newRS) - Number(newRS.status?.availableReplicas ?? 0);
    const maxScaledDown = sumSpec(all) - minAvailable - newUnavailable;
    if (maxScaledDown <= 0) return false;
    // kube's cleanupUnhealthyReplicas: unavailable old pods go first, as far as allowed
    oldActive.sort(byCreation);
    let cleaned = 0;
    for (const rs of oldActive) {
      if (cleaned >= maxScaledDown) break;
      const avail = Number(rs.status?.availableReplicas ?? 0);
      if (specReplicas(rs) === 0 || specReplicas(rs) === avail) continue;
      const down = Math.min(maxScaledDown - cleaned, specReplicas(rs) - avail);
      await this.scaleTo(rs, specReplicas(rs) - down);
      cleaned += down;
    }
    // kube's scaleDownOldReplicaSetsForRollingUpdate: then available old pods, above minAvailable
    let scaledDown = 0;
    const availableNow = sumStatus(all, 'availableReplicas');
    if (availableNow > minAvailable) {
      const total = availableNow - minAvailable;
      for (const rs of oldActive) {
        if (scaledDown >= total) break;
        if (specReplicas(rs) === 0) continue;
        const down = Math.min(specReplicas(rs), total - scaledDown);
        await this.scaleTo(rs, specReplicas(rs) - down);
        scaledDown += down;
      }
    }
    return cleaned + scaledDown > 0;
  }

  /** kube's rolloutRecreate */
  async rolloutRecreate(rsList: RS[]): Promise<void> {
    let { newRS, oldRSs } = await this.allAndSyncRevision(rsList, false);
    let all = [...oldRSs, ...(newRS ? [newRS] : [])];
    let scaledDown = false;
    for (const rs of oldRSs.filter((r) => specReplicas(r) > 0)) if (await this.scaleTo(rs, 0)) scaledDown = true;
    if (scaledDown) return this.syncRolloutStatus(all, newRS);
    if (this.oldPodsRunning(newRS, oldRSs)) return this.syncRolloutStatus(all, newRS);
    if (!newRS) {
      ({ newRS, oldRSs } = await this.allAndSyncRevision(rsList, true));
      all = [...oldRSs, ...(newRS ? [newRS] : [])];
    }
    if (newRS) await this.scaleTo(newRS, replicasOf(this.d));
    if (deploymentComplete(this.d, this.d.status)) await this.cleanup(oldRSs);
    return this.syncRolloutStatus(all, newRS);
  }

  /** kube's oldPodsRunning: an old ReplicaSet still counts pods, or one of its pods is not finished */
  private oldPodsRunning(newRS: RS | undefined, oldRSs: RS[]): boolean {
    if (sumStatus(oldRSs, 'replicas') > 0) return true;
    const oldUids = new Set(oldRSs.map((r) => r.metadata.uid));
    if (oldUids.size === 0) return false;
    for (const e of this.store.cacheOf(this.c.podsT).list(this.ns)) {
      const pod = entryObject(e);
      const ref = controllerRef(pod);
      if (!ref || !oldUids.has(ref.uid) || ref.uid === newRS?.metadata?.uid) continue;
      const phase = pod.status?.phase;
      if (phase === 'Failed' || phase === 'Succeeded') continue;
      return true;
    }
    return false;
  }
}

/** kube's FindActiveOrLatest */
function findActiveOrLatest(newRS: RS | undefined, oldRSs: RS[]): RS | undefined {
  if (!newRS && oldRSs.length === 0) return undefined;
  const active = [...oldRSs, ...(newRS ? [newRS] : [])].filter((r) => specReplicas(r) > 0);
  if (active.length === 0) return newRS ?? [...oldRSs].sort(byCreation).at(-1);
  if (active.length === 1) return active[0];
  return undefined;
}

/** kube's IsSaturated */
function isSaturated(d: Deployment, rs: RS | undefined): boolean {
  if (!rs) return false;
  const n = replicasOf(d);
  return specReplicas(rs) === n && annotationInt(rs, DESIRED_REPLICAS) === n && Number(rs.status?.availableReplicas ?? 0) === n;
}

/** status equality as stored (zero counts are omitted when served) */
function statusEqual(a: any, b: any): boolean {
  const norm = (s: any) => {
    const out: any = {};
    for (const [k, v] of Object.entries(s ?? {})) if (v !== 0 && v !== undefined && v !== null) out[k] = v;
    return out;
  };
  return deepEqual(norm(a), norm(b));
}
