// Field ownership across the scale subresource, after kube's managedfields ScaleHandler.
//
// A write to /scale is a write to an autoscaling/v1 Scale whose managedFields are derived
// from the parent's: every parent entry that owns the parent's replicas field appears as an
// entry owning the Scale's spec.replicas (in autoscaling/v1). The write's own field
// management (update, patch or apply, with its conflicts) runs on that Scale; the result is
// mapped back: a parent entry whose Scale counterpart lost spec.replicas loses the replicas
// field (it was taken by the scaler), and each Scale entry that owns spec.replicas and has no
// parent counterpart becomes a parent entry owning the replicas field, in the parent's
// version. Entries match by identity (manager, operation, version for updates, subresource),
// so an updater's Scale entry (autoscaling/v1) never matches its parent entry (apps/v1), and
// such entries are written without a time, as kube-apiserver writes them.
import { FieldSet } from './managed-fields.js';
import { decodeManaged, encodeManaged, type Managed } from './apply.js';

export const SCALE_API_VERSION = 'autoscaling/v1';
const REPLICAS_IN_SCALE = ['f:spec', 'f:replicas'];

/** Per parent resource: the versions whose managed fields are understood, each with its replicas path. */
const REPLICAS_PATHS: Record<string, Record<string, string[]>> = {
  'deployments.apps': { 'apps/v1': ['f:spec', 'f:replicas'], 'apps/v1beta1': ['f:spec', 'f:replicas'], 'apps/v1beta2': ['f:spec', 'f:replicas'] },
  'statefulsets.apps': { 'apps/v1': ['f:spec', 'f:replicas'], 'apps/v1beta1': ['f:spec', 'f:replicas'], 'apps/v1beta2': ['f:spec', 'f:replicas'] },
  'replicasets.apps': { 'apps/v1': ['f:spec', 'f:replicas'], 'apps/v1beta2': ['f:spec', 'f:replicas'] },
  replicationcontrollers: { v1: ['f:spec', 'f:replicas'] },
};

/** Where a parent's replicas field sits in its managed fields, per apiVersion of an entry (undefined: not understood). */
export type ReplicasPaths = (apiVersion: string) => string[] | undefined;

/** The built-in scalable kinds' paths, by group-resource. */
export function builtinReplicasPaths(gr: string): ReplicasPaths {
  const paths = REPLICAS_PATHS[gr] ?? { 'apps/v1': ['f:spec', 'f:replicas'], v1: ['f:spec', 'f:replicas'] };
  return (v) => paths[v];
}

function only(path: string[]): FieldSet {
  const s = new FieldSet();
  s.insert(path);
  return s;
}

/** The Scale's managedFields, derived from the parent's (kube's ToSubresource). */
export function scaleManagedFields(pathOf: ReplicasPaths, parentEntries: unknown): any[] | undefined {
  const parent = decodeManaged(parentEntries) ?? new Map<string, Managed>();
  const out = new Map<string, Managed>();
  for (const [k, m] of parent) {
    const p = pathOf(m.apiVersion);
    if (!p || !m.set.has(p)) continue;
    out.set(k, { ...m, apiVersion: SCALE_API_VERSION, set: only(REPLICAS_IN_SCALE) });
  }
  // Encoded, the entries are keyed again by their new version when the Scale's are decoded.
  return encodeManaged(out);
}

/** The parent's managedFields after a Scale write (kube's ToParent). parentVersion: the parent's storage group/version. */
export function parentManagedFields(pathOf: ReplicasPaths, parentVersion: string, parentEntries: unknown, scaleEntries: unknown): any[] | undefined {
  const parent = decodeManaged(parentEntries) ?? new Map<string, Managed>();
  const scale = decodeManaged(scaleEntries) ?? new Map<string, Managed>();
  const out = new Map<string, Managed>();
  for (const [k, m] of parent) {
    const p = pathOf(m.apiVersion);
    if (!p) continue; // a version without a mapping is dropped
    if (!m.set.has(p)) {
      out.set(k, m);
      continue;
    }
    if (scale.has(k)) {
      // still the owner on the Scale side: kept as it is
      out.set(k, m);
      scale.delete(k);
      continue;
    }
    // taken by the scaler
    const rest = m.set.difference(only(p));
    if (!rest.empty()) out.set(k, { ...m, set: rest });
  }
  const target = pathOf(parentVersion) ?? ['f:spec', 'f:replicas'];
  for (const [k, m] of scale) {
    if (!m.set.has(REPLICAS_IN_SCALE)) continue;
    out.set(k, { ...m, apiVersion: parentVersion, set: only(target), time: parent.get(k)?.time });
  }
  return encodeManaged(out);
}
