// What a DELETE does to one object (kube's rest.BeforeDelete, deletionFinalizersForGarbageCollection
// and updateForGracefulDeletionAndFinalizers, folded into one decision):
//
//   - preconditions on uid and resourceVersion, 409 when they do not hold;
//   - graceful deletion for kinds that have it (pods): deletionTimestamp in the future and
//     deletionGracePeriodSeconds; a later delete may only shorten the period;
//   - the garbage-collection finalizers `orphan` and `foregroundDeletion`, from
//     propagationPolicy, the deprecated orphanDependents, the finalizers already there and
//     the kind's default policy;
//   - an object with finalizers is only marked (deletionTimestamp, grace 0) and stays until
//     they are removed.
import { errors } from '../errors.js';
import type { ResourceTarget } from './store.js';

export const FINALIZER_ORPHAN = 'orphan';
export const FINALIZER_FOREGROUND = 'foregroundDeletion';

export interface DeleteOptions {
  dryRun: boolean;
  gracePeriodSeconds?: number;
  propagationPolicy?: string;
  /** deprecated form of propagationPolicy Orphan (true) / Background (false) */
  orphanDependents?: boolean;
  preconditions?: { uid?: string; resourceVersion?: string };
  ignoreStoreReadErrorWithClusterBreakingPotential?: boolean;
}

export type DeletePlan =
  /** remove from storage now; obj is its last state */
  | { kind: 'now'; obj: any }
  /** write obj (marked for deletion) and keep it */
  | { kind: 'update'; obj: any }
  /** deletion is already under way and this request changes nothing */
  | { kind: 'pending' };

export function checkPreconditions(t: ResourceTarget, name: string, obj: any, rv: number, pre: DeleteOptions['preconditions']): void {
  if (pre?.uid && pre.uid !== obj.metadata.uid) {
    throw errors.conflict(t.groupResource, name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${obj.metadata.uid ?? ''}`);
  }
  if (pre?.resourceVersion && pre.resourceVersion !== String(rv)) {
    throw errors.conflict(t.groupResource, name, `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${rv}`);
  }
}

function shouldOrphan(t: ResourceTarget, finalizers: string[], o: DeleteOptions): boolean {
  const def = t.strategy.defaultGarbageCollectionPolicy(t.info.version);
  if (def === 'Unsupported') return false;
  if (o.orphanDependents !== undefined) return o.orphanDependents;
  if (o.propagationPolicy === 'Orphan') return true;
  if (o.propagationPolicy === 'Background' || o.propagationPolicy === 'Foreground') return false;
  for (const f of finalizers) {
    if (f === FINALIZER_ORPHAN) return true;
    if (f === FINALIZER_FOREGROUND) return false;
  }
  return def === 'OrphanDependents';
}

function shouldDeleteDependents(t: ResourceTarget, finalizers: string[], o: DeleteOptions): boolean {
  if (t.strategy.defaultGarbageCollectionPolicy(t.info.version) === 'Unsupported') return false;
  if (o.orphanDependents !== undefined) return false;
  if (o.propagationPolicy === 'Foreground') return true;
  if (o.propagationPolicy === 'Orphan' || o.propagationPolicy === 'Background') return false;
  for (const f of finalizers) {
    if (f === FINALIZER_FOREGROUND) return true;
    if (f === FINALIZER_ORPHAN) return false;
  }
  return false;
}

/** The finalizers after the delete options are applied, or null when they do not change. */
function gcFinalizers(t: ResourceTarget, finalizers: string[], o: DeleteOptions): string[] | null {
  const out = finalizers.filter((f) => f !== FINALIZER_ORPHAN && f !== FINALIZER_FOREGROUND);
  if (shouldOrphan(t, finalizers, o)) out.push(FINALIZER_ORPHAN);
  if (shouldDeleteDependents(t, finalizers, o)) out.push(FINALIZER_FOREGROUND);
  const a = new Set(finalizers);
  const b = new Set(out);
  if (a.size === b.size && [...a].every((f) => b.has(f))) return null;
  return out;
}

function unchanged(obj: any, current: any): boolean {
  const { resourceVersion: _a, ...m1 } = obj.metadata;
  const { resourceVersion: _b, ...m2 } = current.metadata;
  return JSON.stringify({ ...obj, metadata: m1 }) === JSON.stringify({ ...current, metadata: m2 });
}

function timestamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Decides what a delete with options `o` does to `current` (which is not modified). */
export function planDelete(t: ResourceTarget, current: any, o: DeleteOptions, nowMs = Date.now()): DeletePlan {
  const obj = structuredClone(current);
  const m = obj.metadata;
  delete m.resourceVersion;
  if (!m.deletionTimestamp) t.strategy.beforeDelete(obj);
  let requested = o.gracePeriodSeconds;
  if (requested !== undefined && requested < 0) requested = 1; // negative means 1s on the delete path
  const gracefulKind = t.strategy.checkGracefulDelete(current, requested) !== undefined;

  let graceful = false;
  let period = 0;
  if (gracefulKind) {
    if (m.deletionTimestamp) {
      const cur: number | undefined = m.deletionGracePeriodSeconds;
      if (cur !== undefined && cur !== null && cur !== 0) {
        // Being deleted: a client may only shorten the period.
        if (requested === undefined || requested >= cur) return { kind: 'pending' };
        const start = Date.parse(m.deletionTimestamp) - cur * 1000;
        m.deletionTimestamp = timestamp(start + requested * 1000);
        m.deletionGracePeriodSeconds = requested;
        graceful = true;
        period = requested;
      }
    } else {
      period = t.strategy.checkGracefulDelete(current, requested)!;
      m.deletionTimestamp = timestamp(nowMs + period * 1000);
      m.deletionGracePeriodSeconds = period;
      if (m.generation > 0) m.generation++;
      graceful = true;
    }
  }

  const finalizers: string[] = m.finalizers ?? [];
  const next = gcFinalizers(t, finalizers, o);
  if (!graceful && finalizers.length === 0 && next === null) return { kind: 'now', obj };
  if (next !== null) {
    if (next.length) m.finalizers = next;
    else delete m.finalizers;
  }
  const pendingFinalizers = (m.finalizers ?? []).length > 0;
  if (!graceful) {
    if (!pendingFinalizers) return { kind: 'now', obj };
    // Marked for deletion; the finalizers' owners finish it.
    if (!m.deletionTimestamp && m.generation > 0) m.generation++;
    if (!m.deletionTimestamp || Date.parse(m.deletionTimestamp) > nowMs) m.deletionTimestamp = timestamp(nowMs);
    m.deletionGracePeriodSeconds = 0;
    return unchanged(obj, current) ? { kind: 'pending' } : { kind: 'update', obj };
  }
  if (pendingFinalizers || period > 0) return { kind: 'update', obj };
  return { kind: 'now', obj };
}
