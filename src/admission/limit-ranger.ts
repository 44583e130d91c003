// LimitRanger (kube's plugin/pkg/admission/limitranger): a namespace's LimitRanges fill
// the default limits and requests of containers (and init containers) that leave them out
// on Pod creation, noting what was set in the kubernetes.io/limit-ranger annotation; then
// pods (per Container and per Pod) and PersistentVolumeClaims (create and update) outside
// min, max or maxLimitRequestRatio are refused with kube's 403 messages. Pod updates are
// not looked at (containers' resources cannot change there, as kube reasons).
import { addQuantity, canonicalQuantity, milliValue as milli, parseQuantity, type Quantity } from '../registry/quantity.js';
import { AdmissionPlugin, aggregate, arr, forbidden, isObj, type Attributes } from './plugin.js';

const ANNOTATION = 'kubernetes.io/limit-ranger';

const str = (v: unknown): string => {
  const q = parseQuantity(v);
  return q ? canonicalQuantity(q) : String(v);
};

type Resources = Record<string, unknown>;

export function minConstraint(limitType: string, name: string, enforced: unknown, req: Resources, lim: Resources): string | undefined {
  const e = parseQuantity(enforced);
  if (!e) return undefined;
  if (!(name in req)) return `minimum ${name} usage per ${limitType} is ${str(enforced)}.  No request is specified`;
  const r = parseQuantity(req[name]);
  if (r && milli(r) < milli(e)) return `minimum ${name} usage per ${limitType} is ${str(enforced)}, but request is ${str(req[name])}`;
  const l = name in lim ? parseQuantity(lim[name]) : undefined;
  if (l && milli(l) < milli(e)) return `minimum ${name} usage per ${limitType} is ${str(enforced)}, but limit is ${str(lim[name])}`;
  return undefined;
}

export function maxConstraint(limitType: string, name: string, enforced: unknown, req: Resources, lim: Resources): string | undefined {
  const e = parseQuantity(enforced);
  if (!e) return undefined;
  if (!(name in lim)) return `maximum ${name} usage per ${limitType} is ${str(enforced)}.  No limit is specified`;
  const l = parseQuantity(lim[name]);
  if (l && milli(l) > milli(e)) return `maximum ${name} usage per ${limitType} is ${str(enforced)}, but limit is ${str(lim[name])}`;
  const r = name in req ? parseQuantity(req[name]) : undefined;
  if (r && milli(r) > milli(e)) return `maximum ${name} usage per ${limitType} is ${str(enforced)}, but request is ${str(req[name])}`;
  return undefined;
}

function maxRequestConstraint(limitType: string, name: string, enforced: unknown, req: Resources): string | undefined {
  const e = parseQuantity(enforced);
  if (!e) return undefined;
  if (!(name in req)) return `maximum ${name} usage per ${limitType} is ${str(enforced)}.  No request is specified`;
  const r = parseQuantity(req[name]);
  if (r && milli(r) > milli(e)) return `maximum ${name} usage per ${limitType} is ${str(enforced)}, but request is ${str(req[name])}`;
  return undefined;
}

export function ratioConstraint(limitType: string, name: string, enforced: unknown, req: Resources, lim: Resources): string | undefined {
  const e = parseQuantity(enforced);
  if (!e) return undefined;
  const r = name in req ? parseQuantity(req[name]) : undefined;
  const l = name in lim ? parseQuantity(lim[name]) : undefined;
  const rv = r ? milli(r) : 0n;
  const lv = l ? milli(l) : 0n;
  if (rv === 0n) return `${name} max limit to request ratio per ${limitType} is ${str(enforced)}, but no request is specified or request is 0`;
  if (lv === 0n) return `${name} max limit to request ratio per ${limitType} is ${str(enforced)}, but no limit is specified or limit is 0`;
  const ratio = Number(lv) / Number(rv);
  if (ratio * 1000 > Number(milli(e))) {
    return `${name} max limit to request ratio per ${limitType} is ${str(enforced)}, but provided ratio is ${ratio.toFixed(6)}`;
  }
  return undefined;
}

const resourcesOf = (c: any): { req: Resources; lim: Resources } => ({
  req: isObj(c?.resources?.requests) ? c.resources.requests : {},
  lim: isObj(c?.resources?.limits) ? c.resources.limits : {},
});

/** The pod's total: the containers' sum, or an init container's own when larger (kube's pod requests and limits). */
function podTotal(spec: any, which: 'req' | 'lim'): Resources {
  const sum = new Map<string, Quantity>();
  const add = (into: Map<string, Quantity>, k: string, q: Quantity) => {
    const cur = into.get(k);
    if (!cur) into.set(k, q);
    else into.set(k, addQuantity(cur, q));
  };
  for (const c of arr(spec.containers)) for (const [k, v] of Object.entries(resourcesOf(c)[which])) { const q = parseQuantity(v); if (q) add(sum, k, q); }
  for (const c of arr(spec.initContainers)) {
    for (const [k, v] of Object.entries(resourcesOf(c)[which])) {
      const q = parseQuantity(v);
      const cur = sum.get(k);
      if (q && (!cur || milli(q) > milli(cur))) sum.set(k, q);
    }
  }
  return Object.fromEntries([...sum].map(([k, q]) => [k, canonicalQuantity(q)]));
}

export class LimitRanger extends AdmissionPlugin {
  readonly name = 'LimitRanger';

  handles(a: Attributes): boolean {
    if (a.subresource !== '' || a.groupResource.group !== '') return false;
    if (a.groupResource.resource === 'pods') return a.operation === 'CREATE' && isObj(a.obj?.spec);
    return a.groupResource.resource === 'persistentvolumeclaims' && isObj(a.obj?.spec);
  }

  private ranges(ns: string): any[] {
    return this.objects.list('limitranges', ns);
  }

  override admit(a: Attributes): void {
    if (a.groupResource.resource !== 'pods') return;
    const requests: Resources = {};
    const limits: Resources = {};
    for (const lr of this.ranges(a.namespace)) {
      for (const item of arr(lr?.spec?.limits)) {
        if (item?.type !== 'Container') continue;
        if (isObj(item.defaultRequest)) Object.assign(requests, item.defaultRequest);
        if (isObj(item.default)) Object.assign(limits, item.default);
      }
    }
    if (!Object.keys(requests).length && !Object.keys(limits).length) return;
    const notes: string[] = [];
    const merge = (c: any, kind: string) => {
      if (!isObj(c)) return;
      const res = isObj(c.resources) ? c.resources : (c.resources = {});
      const setLim: string[] = [];
      const setReq: string[] = [];
      for (const [k, v] of Object.entries(limits)) {
        if (isObj(res.limits) && k in res.limits) continue;
        res.limits = { ...(isObj(res.limits) ? res.limits : {}), [k]: v };
        setLim.push(k);
      }
      for (const [k, v] of Object.entries(requests)) {
        if (isObj(res.requests) && k in res.requests) continue;
        res.requests = { ...(isObj(res.requests) ? res.requests : {}), [k]: v };
        setReq.push(k);
      }
      if (setReq.length) notes.push(`${setReq.sort().join(', ')} request for ${kind} ${c.name}`);
      if (setLim.length) notes.push(`${setLim.sort().join(', ')} limit for ${kind} ${c.name}`);
    };
    for (const c of arr(a.obj.spec.containers)) merge(c, 'container');
    for (const c of arr(a.obj.spec.initContainers)) merge(c, 'init container');
    if (notes.length) {
      const m = a.obj.metadata;
      m.annotations = { ...(isObj(m.annotations) ? m.annotations : {}), [ANNOTATION]: 'LimitRanger plugin set: ' + notes.join('; ') };
    }
  }

  override validate(a: Attributes): void {
    const errs: string[] = [];
    const push = (e: string | undefined) => e && errs.push(e);
    const isPod = a.groupResource.resource === 'pods';
    for (const lr of this.ranges(a.namespace)) {
      for (const item of arr(lr?.spec?.limits)) {
        const type = item?.type;
        const min = isObj(item?.min) ? item.min : {};
        const max = isObj(item?.max) ? item.max : {};
        const ratio = isObj(item?.maxLimitRequestRatio) ? item.maxLimitRequestRatio : {};
        if (isPod && type === 'Container') {
          for (const c of [...arr(a.obj.spec.containers), ...arr(a.obj.spec.initContainers)]) {
            const { req, lim } = resourcesOf(c);
            for (const [k, v] of Object.entries(min)) push(minConstraint(type, k, v, req, lim));
            for (const [k, v] of Object.entries(max)) push(maxConstraint(type, k, v, req, lim));
            for (const [k, v] of Object.entries(ratio)) push(ratioConstraint(type, k, v, req, lim));
          }
        } else if (isPod && type === 'Pod') {
          const req = podTotal(a.obj.spec, 'req');
          const lim = podTotal(a.obj.spec, 'lim');
          for (const [k, v] of Object.entries(min)) push(minConstraint(type, k, v, req, lim));
          for (const [k, v] of Object.entries(max)) push(maxConstraint(type, k, v, req, lim));
          for (const [k, v] of Object.entries(ratio)) push(ratioConstraint(type, k, v, req, lim));
        } else if (!isPod && type === 'PersistentVolumeClaim') {
          const req = isObj(a.obj.spec.resources?.requests) ? a.obj.spec.resources.requests : {};
          for (const [k, v] of Object.entries(min)) push(minConstraint(type, k, v, req, {}));
          for (const [k, v] of Object.entries(max)) push(maxRequestConstraint(type, k, v, req));
        }
      }
    }
    if (errs.length) throw forbidden(a, aggregate(errs));
  }
}
