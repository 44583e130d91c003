// Defaults of core/v1 kinds other than Pod (SetDefaults_Service, _Secret, _PersistentVolumeClaim,
// _Namespace ...) and of coordination.k8s.io/v1 Lease, 1.33.
import type { ResourceInfo } from '../../api/catalog-types.js';
import { applyMemberDefaults, arr, child, decodeError, def, isObj } from './common.js';
import { setOwn } from '../own-keys.js';

type Info = Pick<ResourceInfo, 'kind' | 'version'>;

/**
 * SetDefaults_Service, without what the ClusterIP allocator decides (clusterIPs, ipFamilies,
 * ipFamilyPolicy and nodePorts are the allocator's).
 */
export function defaultService(obj: any): void {
  const spec = child(obj, 'spec');
  if (!spec) return;
  def(spec, 'sessionAffinity', 'None');
  def(spec, 'type', 'ClusterIP');
  // normalizeClusterIPs: a lone clusterIP (a headless 'None' too) is also the first of clusterIPs.
  if (typeof spec.clusterIP === 'string' && spec.clusterIP !== '' && (!Array.isArray(spec.clusterIPs) || spec.clusterIPs.length === 0)) {
    spec.clusterIPs = [spec.clusterIP];
  }
  if (spec.sessionAffinity === 'ClientIP') {
    const cfg = child(spec, 'sessionAffinityConfig');
    const cip = child(cfg, 'clientIP');
    def(cip, 'timeoutSeconds', 10800);
  }
  for (const p of arr(spec.ports)) {
    if (!isObj(p)) continue;
    def(p, 'protocol', 'TCP');
    if (p.targetPort === undefined || p.targetPort === null || p.targetPort === 0 || p.targetPort === '') p.targetPort = p.port;
  }
  const externallyAccessible =
    spec.type === 'LoadBalancer' || spec.type === 'NodePort' || (spec.type === 'ClusterIP' && arr(spec.externalIPs).length > 0);
  if (externallyAccessible) def(spec, 'externalTrafficPolicy', 'Cluster');
  if ((spec.internalTrafficPolicy === undefined || spec.internalTrafficPolicy === null) && ['NodePort', 'LoadBalancer', 'ClusterIP'].includes(spec.type)) {
    spec.internalTrafficPolicy = 'Cluster';
  }
  if (spec.type === 'LoadBalancer' && (spec.allocateLoadBalancerNodePorts === undefined || spec.allocateLoadBalancerNodePorts === null)) {
    spec.allocateLoadBalancerNodePorts = true;
  }
}

/**
 * The IP families of a new Service that leaves them unset (the service REST's
 * initIPFamilyFields, for this single-stack IPv4 cluster): a headless Service without a
 * selector is RequireDualStack with both families (its endpoints are the user's); every
 * other one that needs families is SingleStack IPv4.
 */
export function defaultServiceFamilies(obj: any): void {
  const spec = obj?.spec;
  if (!isObj(spec) || spec.type === 'ExternalName') return;
  const headless = spec.clusterIP === 'None' || (Array.isArray(spec.clusterIPs) && spec.clusterIPs[0] === 'None');
  const selectorless = !isObj(spec.selector) || Object.keys(spec.selector).length === 0;
  if (headless && selectorless) {
    if (spec.ipFamilyPolicy === undefined || spec.ipFamilyPolicy === null) spec.ipFamilyPolicy = 'RequireDualStack';
    if (!Array.isArray(spec.ipFamilies) || spec.ipFamilies.length === 0) spec.ipFamilies = ['IPv4', 'IPv6'];
    return;
  }
  if (!Array.isArray(spec.ipFamilies) || spec.ipFamilies.length === 0) spec.ipFamilies = ['IPv4'];
  if (spec.ipFamilyPolicy === undefined || spec.ipFamilyPolicy === null) spec.ipFamilyPolicy = 'SingleStack';
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The byte offset Go's base64 decoder reports for malformed input. */
function base64ErrorOffset(s: string): number {
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '=') return s.length % 4 === 0 ? i : Math.floor(s.length / 4) * 4;
    if (!/[A-Za-z0-9+/\r\n]/.test(c)) return i;
  }
  return Math.floor(s.length / 4) * 4;
}

/** Secret: type Opaque; stringData folded into data (as the v1 conversion does); data must be base64. */
export function defaultSecret(obj: any, info: Info): void {
  if (!isObj(obj)) return;
  def(obj, 'type', 'Opaque');
  if (isObj(obj.data)) {
    for (const [k, v] of Object.entries(obj.data)) {
      if (typeof v !== 'string') continue;
      const clean = v.replace(/[\r\n]/g, '');
      if (!BASE64.test(clean)) throw decodeError(info, `illegal base64 data at input byte ${base64ErrorOffset(v)}`);
      if (clean !== v) obj.data[k] = clean;
    }
  }
  if (isObj(obj.stringData)) {
    const data = child(obj, 'data')!;
    // (a key `__proto__` is a key like any other; a value that is no string was refused by the decoder)
    for (const [k, v] of Object.entries(obj.stringData)) setOwn(data, k, Buffer.from(typeof v === 'string' ? v : '', 'utf8').toString('base64'));
    delete obj.stringData;
  }
}

export function defaultPvc(obj: any): void {
  const spec = child(obj, 'spec');
  def(spec, 'volumeMode', 'Filesystem');
}

/** A new claim starts Pending. */
export function defaultPvcStatus(obj: any): void {
  const st = child(obj, 'status');
  def(st, 'phase', 'Pending');
}

export function defaultPv(obj: any): void {
  const spec = child(obj, 'spec');
  applyMemberDefaults(spec, 'io.k8s.api.core.v1.PersistentVolumeSpec');
  if (isObj(spec?.azureDisk) && spec.azureDisk.readOnly === undefined) spec.azureDisk.readOnly = false;
  def(spec, 'persistentVolumeReclaimPolicy', 'Retain');
  def(spec, 'volumeMode', 'Filesystem');
  const st = child(obj, 'status');
  def(st, 'phase', 'Pending');
}

export function defaultServiceAccount(_obj: any): void {
  // SetDefaults_ServiceAccount sets nothing in v1; kept so every kind of the issue has its hook.
}

export function defaultLease(_obj: any): void {
  // coordination.k8s.io/v1 has no defaulters: a Lease is stored as written (spec may be empty).
}

const needsNodePort = (s: any) => s?.type === 'NodePort' || s?.type === 'LoadBalancer';

/**
 * The service strategy's dropTypeDependentFields: when an update changes the type, fields
 * the new type cannot have and the client left as they were are cleared before validation
 * (NodePort to ClusterIP drops the node ports unless the update adds one). ClusterIPs are the allocator's.
 */
export function dropServiceTypeDependentFields(obj: any, old: any): void {
  const spec = obj?.spec;
  const was = old?.spec;
  if (!isObj(spec) || !isObj(was) || spec.type === was.type) return;
  const same = (k: string) => JSON.stringify(spec[k] ?? null) === JSON.stringify(was[k] ?? null);
  // Switching to ExternalName: the address fields go unless the client changed them (the
  // allocator then releases the address), as kube's dropTypeDependentFields.
  if (was.type !== 'ExternalName' && spec.type === 'ExternalName') {
    if ((spec.clusterIP ?? '') === (was.clusterIP ?? '') && same('clusterIPs')) {
      delete spec.clusterIP;
      delete spec.clusterIPs;
    }
    if (same('ipFamilies')) delete spec.ipFamilies;
    if (same('ipFamilyPolicy')) delete spec.ipFamilyPolicy;
  }
  if (needsNodePort(was) && !needsNodePort(spec)) {
    // kube's sameNodePorts: ports may be added, removed or changed as long as no node port
    // is new (the old ones are a superset of the new ones); then they all go.
    const nodePorts = (s: any) => new Set(arr(s.ports).map((p: any) => p?.nodePort ?? 0).filter((n: number) => n !== 0));
    const before = nodePorts(was);
    if ([...nodePorts(spec)].every((n) => before.has(n))) for (const p of arr(spec.ports)) if (isObj(p)) delete p.nodePort;
    if (same('externalTrafficPolicy')) delete spec.externalTrafficPolicy;
  }
  if (was.type === 'LoadBalancer' && spec.type !== 'LoadBalancer') {
    if (same('healthCheckNodePort')) delete spec.healthCheckNodePort;
    if (same('allocateLoadBalancerNodePorts')) delete spec.allocateLoadBalancerNodePorts;
    if (same('loadBalancerClass')) delete spec.loadBalancerClass;
  }
}
