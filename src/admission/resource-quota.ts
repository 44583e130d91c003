// ResourceQuota admission (kube's plugin/pkg/admission/resourcequota), last in the chain:
// a create that would take a namespace's usage of a quota's hard resource over its limit
// is refused with kube's 403 `exceeded quota: <name>, requested: ..., used: ..., limited:
// ...`; a pod that leaves out a compute resource a quota tracks is refused with `failed
// quota: <name>: must specify ...`. Tracked: count/<resource>[.<group>] for any kind, the
// legacy object counts (pods, services, configmaps, secrets, persistentvolumeclaims,
// replicationcontrollers, resourcequotas, services.nodeports, services.loadbalancers), the
// compute ones of non-terminal pods (cpu, memory, requests.*, limits.*) and
// requests.storage of claims. Creates only (kube also charges some updates).
//
// Usage is computed from the caches at admission time (kube reads status.used and writes
// it back in the same step); src/controllers/resource-quota.ts keeps status current for
// readers. Two racing creates may both pass where kube's status write would stop one.
import { addQuantity as add, canonicalQuantity, compareQuantity as cmp, parseQuantity, type Quantity } from '../registry/quantity.js';
import { AdmissionPlugin, arr, forbidden, isObj, type Attributes, type ObjectSource } from './plugin.js';

const LEGACY_COUNTS: Record<string, string> = {
  pods: 'pods',
  services: 'services',
  configmaps: 'configmaps',
  secrets: 'secrets',
  persistentvolumeclaims: 'persistentvolumeclaims',
  replicationcontrollers: 'replicationcontrollers',
  resourcequotas: 'resourcequotas',
};
const COMPUTE: Record<string, ['requests' | 'limits', string]> = {
  cpu: ['requests', 'cpu'],
  memory: ['requests', 'memory'],
  'requests.cpu': ['requests', 'cpu'],
  'requests.memory': ['requests', 'memory'],
  'requests.ephemeral-storage': ['requests', 'ephemeral-storage'],
  'limits.cpu': ['limits', 'cpu'],
  'limits.memory': ['limits', 'memory'],
  'limits.ephemeral-storage': ['limits', 'ephemeral-storage'],
};

const ZERO: Quantity = { m: 0n, s: 0, format: 'DecimalSI' };
const count = (n: number): Quantity => ({ m: BigInt(n), s: 0, format: 'DecimalSI' });

function podTerminal(pod: any): boolean {
  const phase = pod?.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

/** A pod's request or limit of one resource: the containers' sum, or an init container's when larger. */
function podAmount(pod: any, which: 'requests' | 'limits', res: string): Quantity {
  let sum = ZERO;
  for (const c of arr(pod?.spec?.containers)) {
    const q = parseQuantity(c?.resources?.[which]?.[res]);
    if (q) sum = add(sum, q);
  }
  for (const c of arr(pod?.spec?.initContainers)) {
    const q = parseQuantity(c?.resources?.[which]?.[res]);
    if (q && cmp(q, sum) > 0) sum = q;
  }
  return sum;
}

/** What one object uses of the quota resource `name` (undefined: the resource does not concern this kind). */
export function usageOf(name: string, gr: string, obj: any): Quantity | undefined {
  if (name.startsWith('count/')) return name.slice(6) === gr ? count(1) : undefined;
  if (LEGACY_COUNTS[name] === gr) return gr === 'pods' && podTerminal(obj) ? count(0) : count(1);
  if (gr === 'services') {
    const type = obj?.spec?.type;
    if (name === 'services.loadbalancers') return count(type === 'LoadBalancer' ? 1 : 0);
    if (name === 'services.nodeports') return count(type === 'NodePort' || type === 'LoadBalancer' ? arr(obj?.spec?.ports).length : 0);
  }
  if (gr === 'pods' && name in COMPUTE) return podTerminal(obj) ? ZERO : podAmount(obj, ...COMPUTE[name]);
  if (gr === 'persistentvolumeclaims' && name === 'requests.storage') return parseQuantity(obj?.spec?.resources?.requests?.storage) ?? ZERO;
  return undefined;
}

/** The group-resources a quota resource name is computed from. */
export function sourcesOf(name: string): string[] {
  if (name.startsWith('count/')) return [name.slice(6)];
  if (name in LEGACY_COUNTS) return [LEGACY_COUNTS[name]];
  if (name === 'services.loadbalancers' || name === 'services.nodeports') return ['services'];
  if (name in COMPUTE) return ['pods'];
  if (name === 'requests.storage') return ['persistentvolumeclaims'];
  return [];
}

/** A namespace's usage of every resource in `hard`, from the caches (kube's quota controller recalculation). */
export function namespaceUsage(objects: ObjectSource, ns: string, hard: Record<string, unknown>): Record<string, Quantity> {
  const used: Record<string, Quantity> = {};
  for (const name of Object.keys(hard)) {
    let total = ZERO;
    for (const gr of sourcesOf(name)) for (const o of objects.list(gr, ns)) total = add(total, usageOf(name, gr, o) ?? ZERO);
    used[name] = total;
  }
  return used;
}

const pretty = (m: Record<string, Quantity | unknown>): string =>
  Object.keys(m)
    .sort()
    .map((k) => {
      const v = m[k];
      const q = typeof v === 'object' && v !== null && 'm' in (v as any) ? (v as Quantity) : parseQuantity(v);
      return `${k}=${q ? canonicalQuantity(q) : String(v)}`;
    })
    .join(',');

export class ResourceQuotaAdmission extends AdmissionPlugin {
  readonly name = 'ResourceQuota';
  constructor(objects: ObjectSource) {
    super(objects);
  }

  handles(a: Attributes): boolean {
    return a.operation === 'CREATE' && a.subresource === '' && !!a.info.namespaced && a.namespace !== '';
  }

  override validate(a: Attributes): void {
    const quotas = this.objects.list('resourcequotas', a.namespace);
    if (quotas.length === 0) return;
    const gr = a.groupResource.group ? `${a.groupResource.resource}.${a.groupResource.group}` : a.groupResource.resource;
    for (const rq of [...quotas].sort((x, y) => (x.metadata.name < y.metadata.name ? -1 : 1))) {
      const hard: Record<string, unknown> = isObj(rq?.spec?.hard) ? rq.spec.hard : {};
      // Pods must name every compute resource a quota limits (kube's pod evaluator constraints).
      if (gr === 'pods') {
        const missing = new Set<string>();
        for (const name of Object.keys(hard)) {
          if (!(name in COMPUTE)) continue;
          const [which, res] = COMPUTE[name];
          for (const c of [...arr(a.obj.spec?.containers), ...arr(a.obj.spec?.initContainers)]) {
            if (!isObj(c?.resources?.[which]) || !(res in c.resources[which])) missing.add(name);
          }
        }
        if (missing.size) throw forbidden(a, `failed quota: ${rq.metadata.name}: must specify ${[...missing].sort().join(',')}`);
      }
      const requested: Record<string, Quantity> = {};
      for (const name of Object.keys(hard)) {
        const u = usageOf(name, gr, a.obj);
        if (u) requested[name] = u;
      }
      if (Object.keys(requested).length === 0) continue;
      const used = namespaceUsage(this.objects, a.namespace, requested);
      const exceeded = Object.keys(requested).filter((k) => {
        const h = parseQuantity(hard[k]);
        return h && cmp(add(used[k], requested[k]), h) > 0;
      });
      if (exceeded.length) {
        const pick = <T>(m: Record<string, T>) => Object.fromEntries(exceeded.map((k) => [k, m[k]]));
        throw forbidden(a, `exceeded quota: ${rq.metadata.name}, requested: ${pretty(pick(requested))}, used: ${pretty(pick(used))}, limited: ${pretty(pick(hard))}`);
      }
    }
  }
}
