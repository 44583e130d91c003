// ClusterIP and NodePort allocation for Services (kube-apiserver's service REST
// allocation: allocateCreate / allocateUpdate / release).
//
// Thread ownership: the front thread. The state is derived from the stored Services at
// start-up and then kept by the store's create/update/delete hooks: a value is reserved
// synchronously before the commit is sent, kept when it succeeds, and released when the
// commit fails, for a dry run, and when the Service is deleted.
import { errors, GoValue, StatusError } from '../../errors.js';
import type { FieldError } from '../strategy.js';
import { IpAllocator, PortAllocator } from './range-allocator.js';
import { IpAddressObjects, LABEL_MANAGED_BY, IPALLOCATOR_NAME, type ServiceRef } from './ip-address-objects.js';

/** Called once the write's outcome is known: true when it was committed. */
export type Finish = (committed: boolean) => void | Promise<void>;

function refOf(svc: any): ServiceRef {
  return { namespace: svc?.metadata?.namespace ?? '', name: svc?.metadata?.name ?? '' };
}

function svcType(spec: any): string {
  return spec?.type || 'ClusterIP';
}

function needsClusterIp(spec: any): boolean {
  return svcType(spec) !== 'ExternalName' && spec?.clusterIP !== 'None' && spec?.clusterIPs?.[0] !== 'None';
}

/** Types whose ports may hold nodePorts. */
function hasNodePorts(spec: any): boolean {
  const t = svcType(spec);
  return t === 'NodePort' || t === 'LoadBalancer';
}

/** Types whose ports get a nodePort when they ask for none. */
function needsNodePorts(spec: any): boolean {
  return hasNodePorts(spec) && (svcType(spec) === 'NodePort' || spec?.allocateLoadBalancerNodePorts !== false);
}

function needsHealthCheckPort(spec: any): boolean {
  return svcType(spec) === 'LoadBalancer' && spec?.externalTrafficPolicy === 'Local';
}

/** Every nodePort a stored Service holds (only types that use them hold any). */
function heldPorts(spec: any): Set<number> {
  const out = new Set<number>();
  if (hasNodePorts(spec)) for (const p of spec?.ports ?? []) if (Number.isInteger(p?.nodePort) && p.nodePort > 0) out.add(p.nodePort);
  if (needsHealthCheckPort(spec) && Number.isInteger(spec?.healthCheckNodePort) && spec.healthCheckNodePort > 0) out.add(spec.healthCheckNodePort);
  return out;
}

function heldIp(spec: any): string | undefined {
  const ip = spec?.clusterIPs?.[0] ?? spec?.clusterIP;
  return typeof ip === 'string' && ip !== '' && ip !== 'None' ? ip : undefined;
}

export class ServiceAllocator {
  readonly ips: IpAllocator;
  readonly ports: PortAllocator;
  /** The IPAddress objects that mirror the addresses (attached once the store exists). */
  readonly objects = new IpAddressObjects();
  /** Which Service holds each allocated address. */
  readonly owners = new Map<string, ServiceRef>();

  constructor(cidr: string, nodePorts: { min: number; max: number }) {
    this.ips = new IpAllocator(cidr);
    this.ports = new PortAllocator(nodePorts.min, nodePorts.max);
  }

  /** Start-up: everything the stored Services hold is taken. */
  load(services: Iterable<any>): void {
    for (const svc of services) {
      const ip = heldIp(svc?.spec);
      if (ip) {
        this.ips.allocate(ip);
        this.owners.set(ip, refOf(svc));
      }
      for (const p of heldPorts(svc?.spec)) this.ports.allocate(p);
    }
  }

  /**
   * Start-up, once the store is attached (kube's repair loops): an address a Service holds
   * without its IPAddress gets one; an IPAddress the allocator manages whose Service no
   * longer holds it is deleted; any other IPAddress in the range keeps its address taken.
   */
  async repair(): Promise<void> {
    const stored = this.objects.stored();
    for (const [ip, o] of stored) {
      const owner = this.owners.get(ip);
      if (owner) continue;
      if (o.metadata?.labels?.[LABEL_MANAGED_BY] === IPALLOCATOR_NAME && o.spec?.parentRef?.resource === 'services' && (o.spec.parentRef.group ?? '') === '') {
        await this.objects.remove(ip);
      } else if (this.ips.contains(ip)) {
        this.ips.allocate(ip);
      }
    }
    for (const [ip, owner] of this.owners) if (!stored.has(ip)) await this.objects.create(ip, owner);
  }

  /** Releases everything a deleted Service held; its IPAddress goes before the address is free. */
  async release(svc: any): Promise<void> {
    for (const p of heldPorts(svc?.spec)) this.ports.release(p);
    const ip = heldIp(svc?.spec);
    if (ip) await this.releaseIp(ip);
  }

  private async releaseIp(ip: string): Promise<void> {
    this.owners.delete(ip);
    await this.objects.remove(ip);
    // A user's IPAddress made in the meantime keeps it (its create found it taken, so none can be).
    this.ips.release(ip);
  }

  /** Reserves the ClusterIP and NodePorts of a new Service, filling in what it did not ask for. */
  allocateCreate(svc: any, dryRun = false): Finish {
    return this.allocate(svc, undefined, dryRun);
  }

  /** Reserves what an update adds; what it drops is released once the update is committed. */
  allocateUpdate(svc: any, old: any, dryRun = false): Finish {
    return this.allocate(svc, old, dryRun);
  }

  /**
   * Why an address cannot be asked for: outside every ServiceCIDR (kube's MetaAllocator finds
   * no allocator for it), or the network or broadcast address of ours (ErrNotInRange).
   */
  private outOfRange(ip: string): string {
    return this.ips.inCidr(ip)
      ? `the provided IP (${ip}) is not in the valid range. The range of valid IPs is ${this.ips.cidr}`
      : 'the provided network does not match the current range';
  }

  private allocate(svc: any, old: any | undefined, dryRun: boolean): Finish {
    const spec = (svc.spec ??= {});
    const name: string = svc.metadata?.name ?? '';
    const taken: Array<() => void> = []; // undo of each new reservation
    const errs: FieldError[] = [];
    const undo = () => {
      for (const u of taken) u();
    };
    const fail = (e: StatusError): never => {
      undo();
      throw e;
    };

    // ClusterIP. An existing Service keeps its address (validation refuses a change).
    const oldIp = old ? heldIp(old.spec) : undefined;
    let newIp: string | undefined;
    if (needsClusterIp(spec)) {
      const asked = heldIp(spec);
      const refuse = (why: string) =>
        errs.push({ field: 'spec.clusterIPs', type: 'FieldValueInvalid', value: new GoValue(`[]string{${JSON.stringify(asked)}}`), detail: `failed to allocate IP ${asked}: ${why}` });
      if (oldIp && (!asked || asked === oldIp)) {
        newIp = oldIp;
      } else if (dryRun) {
        // kube's dry-run allocators check the range only, and answer a dynamic request with
        // the network address rather than look for a free one.
        if (asked && !this.ips.contains(asked)) refuse(this.outOfRange(asked));
        else newIp = asked ?? this.ips.network;
      } else if (asked) {
        const r = this.ips.allocate(asked);
        if (r === 'ok') {
          newIp = asked;
          taken.push(() => this.ips.release(asked));
        } else {
          refuse(r === 'taken' ? 'provided IP is already allocated' : this.outOfRange(asked));
        }
      } else {
        const ip = this.ips.allocateNext();
        if (ip === null) fail(errors.internal('failed to allocate a serviceIP: range is full'));
        newIp = ip!;
        taken.push(() => this.ips.release(ip!));
      }
      if (newIp) {
        spec.clusterIP = newIp;
        if (!Array.isArray(spec.clusterIPs) || spec.clusterIPs.length === 0 || !spec.clusterIPs[0]) spec.clusterIPs = [newIp];
      }
      // kube allocates the IPs first and stops at their error: node ports are not looked at.
      if (errs.length) fail(errors.invalid('Service', '', name, errs));
    } else if (svcType(spec) === 'ExternalName') {
      // An ExternalName Service has no address: one it had is given back.
      if (oldIp && (spec.clusterIP === oldIp || spec.clusterIP === undefined)) {
        delete spec.clusterIP;
        delete spec.clusterIPs;
      }
    }

    // NodePorts. A port the old object held stays its own; new ones are reserved.
    const oldPorts = old ? heldPorts(old.spec) : new Set<number>();
    const mine = new Set<number>();
    const claim = (port: number, field: string): boolean => {
      if (mine.has(port)) return true; // the same port for two protocols of one Service
      if (oldPorts.has(port)) {
        mine.add(port);
        return true;
      }
      const r = this.ports.allocate(port);
      if (r === 'ok') {
        mine.add(port);
        taken.push(() => this.ports.release(port));
        return true;
      }
      const detail = r === 'taken' ? 'provided port is already allocated' : `provided port is not in the valid range. The range of valid ports is ${this.ports.rangeText}`;
      errs.push({ field, type: 'FieldValueInvalid', value: port, detail });
      return false;
    };
    const next = (): number => {
      const p = this.ports.allocateNext();
      if (p === null) fail(errors.internal('failed to allocate a nodePort: range is full'));
      mine.add(p!);
      taken.push(() => this.ports.release(p!));
      return p!;
    };
    const ports: any[] = Array.isArray(spec.ports) ? spec.ports : [];
    if (old && !hasNodePorts(spec) && hasNodePorts(old.spec)) {
      // Leaving NodePort/LoadBalancer: nodePorts the client left as they were go away (kube's dropTypeDependentFields).
      for (const p of ports) if (p?.nodePort && oldPorts.has(p.nodePort)) delete p.nodePort;
    }
    if (old && !needsHealthCheckPort(spec) && spec.healthCheckNodePort && spec.healthCheckNodePort === old.spec?.healthCheckNodePort) {
      delete spec.healthCheckNodePort;
    }
    if (hasNodePorts(spec)) {
      // An update keeps the nodePort of a port that was already there (matched by port and protocol).
      if (old && needsNodePorts(old.spec)) {
        for (const p of ports) {
          if (p && !p.nodePort) {
            const was = (old.spec?.ports ?? []).find((q: any) => q?.port === p.port && (q?.protocol ?? 'TCP') === (p.protocol ?? 'TCP') && q?.nodePort);
            if (was) p.nodePort = was.nodePort;
          }
        }
      }
      ports.forEach((p, i) => {
        if (p && Number.isInteger(p.nodePort) && p.nodePort !== 0) claim(p.nodePort, `spec.ports[${i}].nodePort`);
      });
      if (needsNodePorts(spec)) for (const p of ports) if (p && !p.nodePort) p.nodePort = next();
    }
    if (needsHealthCheckPort(spec)) {
      const asked = spec.healthCheckNodePort;
      if (Number.isInteger(asked) && asked !== 0) claim(asked, 'spec.healthCheckNodePort');
      else {
        const was = old?.spec?.healthCheckNodePort;
        spec.healthCheckNodePort = Number.isInteger(was) && was > 0 && oldPorts.has(was) ? (mine.add(was), was) : next();
      }
    }
    if (errs.length) fail(errors.invalid('Service', '', name, errs));

    return async (committed) => {
      if (!committed) return undo();
      // Committed: what the old object held and the new one does not is free again; a new
      // address gets its IPAddress object (once the Service is stored, as its parent).
      for (const p of oldPorts) if (!mine.has(p)) this.ports.release(p);
      if (newIp && newIp !== oldIp) {
        const ref = refOf(svc);
        this.owners.set(newIp, ref);
        await this.objects.create(newIp, ref);
      }
      if (oldIp && oldIp !== newIp) await this.releaseIp(oldIp);
    };
  }
}
