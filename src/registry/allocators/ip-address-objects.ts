// The API objects of the MultiCIDRServiceAllocator (GA and locked on in kube 1.33): one
// networking.k8s.io/v1 IPAddress per allocated ClusterIP, named by the address, pointing at
// its Service; and the default ServiceCIDR `kubernetes` made from --service-cluster-ip-range.
//
// Thread ownership: the front thread. The allocator's in-memory set stays the authority for
// "is this address free" (reservations are synchronous, so 200 racing creates can never get
// one address twice); the IPAddress objects mirror it, as kube's allocator writes them:
// created once the Service is stored, deleted before the address is free again. A user's
// own IPAddress object takes its address too (kube's allocator treats any IPAddress as
// taken), and one the allocator manages is put back when deleted while its Service still
// holds the address (kube's repair loop). Start-up repairs what a crash left behind.
import { StatusError } from '../../errors.js';
import type { Targets } from '../../api/targets.js';
import { entryObject } from '../../../workers/watch/watch-cache.js';
import { objectKey, type ResourceTarget, type Store } from '../store.js';
import { recordUpdate, type WriteIdentity } from '../apply.js';
import { ANY, rootNode } from '../schema-walk.js';

export const LABEL_IP_FAMILY = 'ipaddress.kubernetes.io/ip-family';
export const LABEL_MANAGED_BY = 'ipaddress.kubernetes.io/managed-by';
/** kube's ipallocator ControllerName, the managed-by value of the objects it writes */
export const IPALLOCATOR_NAME = 'ipallocator.k8s.io';
export const DEFAULT_SERVICE_CIDR = 'kubernetes';
/** The field manager of what kube-apiserver writes through its loopback client. */
const APISERVER_MANAGER = 'kube-apiserver';
const CIDR_CONTROLLER = 'kubernetes-service-cidr-controller';

export interface ServiceRef {
  namespace: string;
  name: string;
}

function fieldsHook(t: ResourceTarget, manager: string, subresource = '') {
  const id: WriteIdentity = { manager, apiVersion: `${t.info.group}/${t.info.version}`, subresource };
  const ctx = { root: rootNode(t.info.group, t.info.version, t.info.kind) ?? ANY, hasStatus: t.hasStatus, statusReset: t.strategy.statusResetFields };
  return (old: any, obj: any) => recordUpdate(old, obj, id, ctx);
}


/** The IPAddress object of a Service's address, as kube's allocator writes it. */
function ipAddressObject(ip: string, svc: ServiceRef) {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'IPAddress',
    metadata: { name: ip, labels: { [LABEL_IP_FAMILY]: ip.includes(':') ? 'IPv6' : 'IPv4', [LABEL_MANAGED_BY]: IPALLOCATOR_NAME } },
    // group is omitempty in kube's ParentReference: the core group is left out.
    spec: { parentRef: { resource: 'services', namespace: svc.namespace, name: svc.name } },
  };
}
export class IpAddressObjects {
  private store?: Store;
  private target?: ResourceTarget;
  /** objects this module is writing itself (not a user's create or delete) */
  readonly internal = new WeakSet<object>();
  readonly deleting = new Set<string>();

  attach(store: Store, targets: Targets): void {
    this.store = store;
    this.target = targets.resolve('networking.k8s.io', 'v1', 'ipaddresses');
  }

  get attached(): boolean {
    return !!this.store && !!this.target;
  }

  /** The IPAddress objects now stored, by name. */
  stored(): Map<string, any> {
    const out = new Map<string, any>();
    if (!this.store || !this.target) return out;
    for (const e of this.store.cacheOf(this.target).items.values()) out.set(e.name, entryObject(e));
    return out;
  }

  has(ip: string): boolean {
    return !!this.store && !!this.target && this.store.cacheOf(this.target).items.has(objectKey('', ip));
  }

  /** Writes the IPAddress of a Service's address (kube's createIPAddress). */
  async create(ip: string, svc: ServiceRef): Promise<void> {
    if (!this.store || !this.target) return;
    const obj = ipAddressObject(ip, svc);
    this.internal.add(obj);
    try {
      await this.store.create(this.target, '', obj, { dryRun: false, fields: fieldsHook(this.target, APISERVER_MANAGER) });
    } catch (e) {
      // Already there (a repair raced a create): the address is recorded either way.
      if (!(e instanceof StatusError && e.code === 409)) console.warn(`W ipallocator: cannot create IPAddress ${ip}: ${(e as Error).message}`);
    }
  }

  /**
   * Shared storage: claims an address for a Service about to be stored by creating its
   * IPAddress first (kube's allocator order). False when it exists already: another
   * replica (or a user) holds the address.
   */
  async claim(ip: string, svc: ServiceRef): Promise<boolean> {
    if (!this.store || !this.target) return true;
    const obj = ipAddressObject(ip, svc);
    this.internal.add(obj);
    try {
      await this.store.create(this.target, '', obj, { dryRun: false, fields: fieldsHook(this.target, APISERVER_MANAGER) });
      return true;
    } catch (e) {
      if (e instanceof StatusError && e.code === 409) return false;
      throw e;
    }
  }

  /** Deletes the IPAddress of a released address; errors are logged, as kube's release ignores them. */
  async remove(ip: string): Promise<void> {
    if (!this.store || !this.target) return;
    this.deleting.add(ip);
    try {
      await this.store.delete(this.target, '', ip, { dryRun: false });
    } catch (e) {
      if (!(e instanceof StatusError && e.code === 404)) console.warn(`W ipallocator: cannot delete IPAddress ${ip}: ${(e as Error).message}`);
    } finally {
      this.deleting.delete(ip);
    }
  }
}

/**
 * kube's default ServiceCIDR controller at start-up: creates `kubernetes` from the flag when
 * it is missing, then marks it Ready (condition Ready=True with its message) when it has no
 * Ready condition and its CIDRs are the flag's. A ServiceCIDR whose CIDRs differ is left
 * alone, as kube leaves it (and reports the mismatch).
 */
export async function ensureDefaultServiceCidr(store: Store, targets: Targets, cidrs: string[]): Promise<void> {
  const t = targets.resolve('networking.k8s.io', 'v1', 'servicecidrs');
  if (!t) return;
  const key = objectKey('', DEFAULT_SERVICE_CIDR);
  if (!store.cacheOf(t).items.has(key)) {
    try {
      await store.create(
        t,
        '',
        { apiVersion: 'networking.k8s.io/v1', kind: 'ServiceCIDR', metadata: { name: DEFAULT_SERVICE_CIDR }, spec: { cidrs } },
        { dryRun: false, fields: fieldsHook(t, APISERVER_MANAGER) },
      );
    } catch (e) {
      if (!(e instanceof StatusError && e.code === 409)) throw e;
    }
  }
  const cur = store.cacheOf(t).items.get(key);
  if (!cur) return;
  const obj = entryObject(cur);
  if (obj.metadata.deletionTimestamp) return;
  if (JSON.stringify(obj.spec?.cidrs ?? []) !== JSON.stringify(cidrs)) {
    console.warn(`W default ServiceCIDR ${JSON.stringify(obj.spec?.cidrs ?? [])} does not match the flag configuration ${JSON.stringify(cidrs)}`);
    return;
  }
  const ready = (obj.status?.conditions ?? []).find((c: any) => c?.type === 'Ready');
  if (ready && ready.status !== 'Unknown') return;
  const hook = fieldsHook(t, CIDR_CONTROLLER, 'status');
  await store.guaranteedUpdate(
    t,
    '',
    DEFAULT_SERVICE_CIDR,
    {
      dryRun: false,
      subresource: 'status',
      // The controller applies its status (a forced apply): its entry is an Apply of status.
      fields: (old, next) => {
        hook(old, next);
        for (const m of next.metadata.managedFields ?? []) if (m.manager === CIDR_CONTROLLER && m.subresource === 'status') m.operation = 'Apply';
      },
    },
    (o) => {
      const others = (o.status?.conditions ?? []).filter((c: any) => c?.type !== 'Ready');
      o.status = {
        ...(o.status ?? {}),
        conditions: [...others, { type: 'Ready', status: 'True', lastTransitionTime: new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z'), reason: '', message: 'Kubernetes default Service CIDR is ready' }],
      };
      return o;
    },
  );
}
