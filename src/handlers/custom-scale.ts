// The scale subresource of a custom resource (autoscaling/v1 Scale), as the CRD's
// subresources.scale maps it: spec.replicas <-> specReplicasPath, status.replicas from
// statusReplicasPath, status.selector from labelSelectorPath (a string, when set). The
// handler is the built-in kinds' (src/handlers/scale.ts), field ownership included: the
// replicas field an entry owns is at specReplicasPath in any version of the CRD's group.
import type { CustomVersion, ScaleSpec } from '../api/custom-resources.js';
import type { ScaleAdapter } from './scale.js';

function segs(path: string): string[] {
  return path.replace(/^\./, '').split('.');
}

function read(obj: any, path: string | undefined): unknown {
  if (!path) return undefined;
  return segs(path).reduce<any>((o, k) => (o && typeof o === 'object' ? o[k] : undefined), obj);
}

function write(obj: any, path: string, v: unknown): void {
  const s = segs(path);
  let o = obj;
  for (const k of s.slice(0, -1)) {
    if (o[k] === null || typeof o[k] !== 'object' || Array.isArray(o[k])) o[k] = {};
    o = o[k];
  }
  o[s[s.length - 1]] = v;
}

export function customScaleOf(obj: any, spec: ScaleSpec): any {
  const m = obj.metadata;
  const sel = read(obj, spec.labelSelectorPath);
  const status: Record<string, unknown> = { replicas: Number(read(obj, spec.statusReplicasPath) ?? 0) || 0 };
  if (typeof sel === 'string' && sel) status.selector = sel;
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, creationTimestamp: m.creationTimestamp },
    spec: { replicas: Number(read(obj, spec.specReplicasPath) ?? 0) || 0 },
    status,
  };
}

export function customScaleAdapter(cv: CustomVersion, spec: ScaleSpec): ScaleAdapter {
  const owned = segs(spec.specReplicasPath).map((k) => `f:${k}`);
  const prefix = `${cv.group}/`;
  return {
    view: (obj) => customScaleOf(obj, spec),
    setReplicas: (obj, replicas) => write(obj, spec.specReplicasPath, replicas),
    replicasPaths: (apiVersion) => (apiVersion.startsWith(prefix) ? owned : undefined),
  };
}
