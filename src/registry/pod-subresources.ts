// pods/ephemeralcontainers and pods/resize: writes that may change one part of a pod's spec,
// as kube's podEphemeralContainersStrategy and podResizeStrategy (1.33, InPlacePodVerticalScaling
// beta and on). The write sees the stored pod with only that part taken from the request;
// validation is the pod's own plus the subresource's update rules. The store calls these from
// prepareUpdate; the generic pod update rules (spec immutability) do not apply to them.
import type { FieldError } from './strategy.js';

const list = (v: unknown): any[] => (Array.isArray(v) ? v : []);

/** The stored pod with only what the subresource may change taken from `obj`. */
export function podSubresourceView(subresource: 'ephemeralcontainers' | 'resize', obj: any, old: any): any {
  const next = structuredClone(old);
  delete next.metadata.resourceVersion;
  next.spec = next.spec ?? {};
  if (subresource === 'ephemeralcontainers') {
    const eph = obj?.spec?.ephemeralContainers;
    if (eph === undefined || eph === null) delete next.spec.ephemeralContainers;
    else next.spec.ephemeralContainers = structuredClone(eph);
    return next;
  }
  // resize: resources and resizePolicy of the containers (and sidecar/init containers) the pod already has, matched by name
  for (const key of ['containers', 'initContainers'] as const) {
    const byName = new Map<string, any>(list(obj?.spec?.[key]).filter((c) => c && typeof c === 'object').map((c) => [c.name, c]));
    for (const c of list(next.spec[key])) {
      const n = byName.get(c.name);
      if (!n) continue;
      for (const f of ['resources', 'resizePolicy']) {
        if (n[f] === undefined) delete c[f];
        else c[f] = structuredClone(n[f]);
      }
    }
  }
  return next;
}

function sortDeep(v: any): any {
  if (Array.isArray(v)) return v.map(sortDeep);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortDeep(v[k])]));
  return v;
}
const same = (a: unknown, b: unknown) => JSON.stringify(sortDeep(a ?? null)) === JSON.stringify(sortDeep(b ?? null));

export function validatePodSubresourceUpdate(subresource: string, obj: any, old: any): FieldError[] {
  return subresource === 'ephemeralcontainers' ? validateEphemeralUpdate(obj, old) : validateResize(obj, old);
}

/** Ephemeral containers may be added, never changed or removed. */
function validateEphemeralUpdate(obj: any, old: any): FieldError[] {
  const errs: FieldError[] = [];
  const now = new Map<string, any>(list(obj.spec?.ephemeralContainers).map((c) => [c?.name, c]));
  for (const was of list(old.spec?.ephemeralContainers)) {
    const cur = now.get(was.name);
    if (!cur) errs.push({ field: 'spec.ephemeralContainers', type: 'FieldValueNotFound', value: was.name });
    else if (!same(cur, was)) {
      errs.push({ field: `spec.ephemeralContainers[${was.name}]`, type: 'FieldValueForbidden', detail: `existing ephemeral containers ${JSON.stringify(was.name)} may not be changed` });
    }
  }
  return errs;
}

type Qos = 'Guaranteed' | 'Burstable' | 'BestEffort';

/** kube's QoS class of a pod from its containers' requests and limits (cpu and memory decide Guaranteed). */
function qosOf(spec: any): Qos {
  const cs = [...list(spec?.initContainers), ...list(spec?.containers)];
  let any = false;
  let guaranteed = true;
  for (const c of cs) {
    const req = c?.resources?.requests ?? {};
    const lim = c?.resources?.limits ?? {};
    if (Object.keys(req).length || Object.keys(lim).length) any = true;
    for (const r of ['cpu', 'memory']) {
      if (lim[r] === undefined) guaranteed = false;
      else if (req[r] !== undefined && String(req[r]) !== String(lim[r])) guaranteed = false;
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

function withoutCpuMemory(c: any): any {
  const x = structuredClone(c ?? {});
  for (const k of ['requests', 'limits']) {
    const m = x.resources?.[k];
    if (!m) continue;
    delete m.cpu;
    delete m.memory;
    if (Object.keys(m).length === 0) delete x.resources[k];
  }
  if (x.resources && Object.keys(x.resources).length === 0) delete x.resources;
  delete x.resizePolicy;
  return x;
}

/** kube's ValidatePodResize, the parts that apply to a server without nodes. */
function validateResize(obj: any, old: any): FieldError[] {
  const podLevel = (p: any) => !!(p.spec?.resources && (Object.keys(p.spec.resources.requests ?? {}).length || Object.keys(p.spec.resources.limits ?? {}).length));
  if (podLevel(old) || podLevel(obj)) return [{ field: '', type: 'FieldValueForbidden', detail: 'pods with pod-level resources cannot be resized' }];
  if (old.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined) return [{ field: '', type: 'FieldValueForbidden', detail: 'static pods cannot be resized' }];
  if (old.spec?.os?.name === 'windows') return [{ field: '', type: 'FieldValueForbidden', detail: 'windows pods cannot be resized' }];
  const errs: FieldError[] = [];
  const oldCs = list(old.spec?.containers);
  list(obj.spec?.containers).forEach((c, i) => {
    if (!same(withoutCpuMemory(c), withoutCpuMemory(oldCs[i]))) errs.push({ field: 'spec', type: 'FieldValueForbidden', detail: 'only cpu and memory resources are mutable' });
  });
  const oldInit = list(old.spec?.initContainers);
  list(obj.spec?.initContainers).forEach((c, i) => {
    const sidecar = c?.restartPolicy === 'Always';
    const changed = sidecar ? !same(withoutCpuMemory(c), withoutCpuMemory(oldInit[i])) : !same(c, oldInit[i]);
    if (changed) errs.push({ field: 'spec', type: 'FieldValueForbidden', detail: 'only cpu and memory resources for sidecar containers are mutable' });
  });
  const before = qosOf(old.spec);
  if (before !== qosOf(obj.spec)) {
    errs.push({ field: 'spec', type: 'FieldValueInvalid', value: old.status?.qosClass ?? before, detail: 'Pod QOS Class may not change as a result of resizing' });
  }
  return errs;
}
