// The facts of an APIService (apiregistration.k8s.io/v1) the aggregator works from: its
// group-version, its Service, its priorities and its Available condition, and the order
// kube-aggregator lists group-versions in (apiregistration/v1/helper SortedByGroupAndVersion).
// Pure functions: no state.
import { compareVersions } from '../api/catalog.js';

export interface ServiceRef {
  namespace: string;
  name: string;
  port: number;
}

export interface APIServiceCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

/** The parts of a stored APIService the aggregator reads. */
export interface APIServiceView {
  name: string;
  group: string;
  version: string;
  /** undefined: a local APIService (served by this server itself) */
  service?: ServiceRef;
  caBundle?: Buffer;
  insecureSkipTLSVerify: boolean;
  groupPriorityMinimum: number;
  versionPriority: number;
  available: boolean;
  /** the stored object's resourceVersion, to tell a changed APIService from the same one */
  resourceVersion: string;
}

export const APISERVICES_GR = 'apiservices.apiregistration.k8s.io';
export const SERVICES_GR = 'services';
export const ENDPOINTSLICES_GR = 'endpointslices.discovery.k8s.io';

export function viewOf(o: any): APIServiceView | undefined {
  const spec = o?.spec;
  const name = o?.metadata?.name;
  if (!spec || typeof name !== 'string') return undefined;
  const svc = spec.service;
  const ca = typeof spec.caBundle === 'string' && spec.caBundle ? Buffer.from(spec.caBundle, 'base64') : undefined;
  return {
    name,
    group: String(spec.group ?? ''),
    version: String(spec.version ?? ''),
    // (kube defaults the port to 443: SetDefaults_ServiceReference)
    service: svc && typeof svc.name === 'string' ? { namespace: String(svc.namespace ?? ''), name: svc.name, port: typeof svc.port === 'number' ? svc.port : 443 } : undefined,
    caBundle: ca,
    insecureSkipTLSVerify: spec.insecureSkipTLSVerify === true,
    groupPriorityMinimum: Number(spec.groupPriorityMinimum ?? 0),
    versionPriority: Number(spec.versionPriority ?? 0),
    available: isConditionTrue(o, 'Available'),
    resourceVersion: String(o?.metadata?.resourceVersion ?? ''),
  };
}

export function conditionOf(o: any, type: string): APIServiceCondition | undefined {
  const cs = o?.status?.conditions;
  return Array.isArray(cs) ? cs.find((c: any) => c?.type === type) : undefined;
}

export function isConditionTrue(o: any, type: string): boolean {
  return conditionOf(o, type)?.status === 'True';
}

/**
 * kube's SetAPIServiceCondition: the transition time moves only when the status changes;
 * reason and message always take the new values. Returns the new conditions list.
 */
export function withCondition(o: any, c: APIServiceCondition): APIServiceCondition[] {
  const cs: APIServiceCondition[] = Array.isArray(o?.status?.conditions) ? o.status.conditions.map((x: any) => ({ ...x })) : [];
  const cur = cs.find((x) => x.type === c.type);
  if (!cur) return [...cs, c];
  if (cur.status !== c.status) {
    cur.status = c.status;
    cur.lastTransitionTime = c.lastTransitionTime;
  }
  cur.reason = c.reason;
  cur.message = c.message;
  return cs;
}

/**
 * The group priority of each group this server serves itself, as kube-apiserver registers
 * its own APIServices (controlplane/apiserver DefaultGenericAPIServicePriorities and the
 * kube-specific groups); a custom resource's group gets 1000 (the CRD registration
 * controller's). apiregistration.k8s.io always leads (the aggregator lists itself first).
 */
const BUILTIN_GROUP_PRIORITY: Record<string, number> = {
  'apiregistration.k8s.io': 20001,
  '': 18000,
  apps: 17800,
  'events.k8s.io': 17750,
  'authentication.k8s.io': 17700,
  'authorization.k8s.io': 17600,
  autoscaling: 17500,
  batch: 17400,
  'certificates.k8s.io': 17300,
  'networking.k8s.io': 17200,
  policy: 17100,
  'rbac.authorization.k8s.io': 17000,
  'storage.k8s.io': 16800,
  'admissionregistration.k8s.io': 16700,
  'apiextensions.k8s.io': 16700,
  'scheduling.k8s.io': 16600,
  'coordination.k8s.io': 16500,
  'node.k8s.io': 16300,
  'discovery.k8s.io': 16200,
  'resource.k8s.io': 16200,
  'flowcontrol.apiserver.k8s.io': 16100,
  'internal.apiserver.k8s.io': 16000,
  'storagemigration.k8s.io': 15800,
};
export const CRD_GROUP_PRIORITY = 1000;

export function localGroupPriority(group: string): number {
  return BUILTIN_GROUP_PRIORITY[group] ?? CRD_GROUP_PRIORITY;
}

/** An aggregated group: its name, its priority (the highest of its APIServices), its APIServices in version order. */
export interface AggregatedGroup {
  name: string;
  priority: number;
  services: APIServiceView[];
}

/**
 * kube's SortedByGroupAndVersion: groups by priority (highest first), then by name; inside
 * a group, versions by versionPriority (highest first), then kube's version order.
 */
export function sortedByGroupAndVersion(services: Iterable<APIServiceView>): AggregatedGroup[] {
  const byGroup = new Map<string, AggregatedGroup>();
  for (const s of services) {
    let g = byGroup.get(s.group);
    if (!g) byGroup.set(s.group, (g = { name: s.group, priority: s.groupPriorityMinimum, services: [] }));
    g.priority = Math.max(g.priority, s.groupPriorityMinimum);
    g.services.push(s);
  }
  const groups = [...byGroup.values()];
  for (const g of groups) g.services.sort((a, b) => b.versionPriority - a.versionPriority || compareVersions(a.version, b.version));
  return groups.sort((a, b) => b.priority - a.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Does group a (priority pa) come before group b (priority pb) in discovery? */
export function groupBefore(a: string, pa: number, b: string, pb: number): boolean {
  return pa > pb || (pa === pb && a < b);
}
