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

/** Called once the write's outcome is known: true when it was committed. */
export type Finish = (committed: boolean) => void;

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

  constructor(cidr: string, nodePorts: { min: number; max: number }) {
    this.ips = new IpAllocator(cidr);
    this.ports = new PortAllocator(nodePorts.min, nodePorts.max);
  }

  /** Start-up: everything the stored Services hold is taken. */
  load(services: Iterable<any>): void {
    for (const svc of services) {
      const ip = heldIp(svc?.spec);
      if (ip) this.ips.allocate(ip);
      for (const p of heldPorts(svc?.spec)) this.ports.allocate(p);
    }
  }

  /** Releases everything a deleted Service held. */
  release(svc: any): void {
    const ip = heldIp(svc?.spec);
    if (ip) this.ips.release(ip);
    for (const p of heldPorts(svc?.spec)) this.ports.release(p);
  }

  /** Reserves the ClusterIP and NodePorts of a new Service, filling in what it did not ask for. */
  allocateCreate(svc: any): Finish {
    return this.allocate(svc, undefined);
  }

  /** Reserves what an update adds; what it drops is released once the update is committed. */
  allocateUpdate(svc: any, old: any): Finish {
    return this.allocate(svc, old);
  }

  private allocate(svc: any, old: any | undefined): Finish {
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
      if (oldIp && (!asked || asked === oldIp)) {
        newIp = oldIp;
      } else if (asked) {
        const r = this.ips.allocate(asked);
        if (r === 'ok') {
          newIp = asked;
          taken.push(() => this.ips.release(asked));
        } else {
          const why = r === 'taken'
            ? 'provided IP is already allocated'
            : `the provided IP (${asked}) is not in the valid range. The range of valid IPs is ${this.ips.cidr}`;
          errs.push({ field: 'spec.clusterIPs', type: 'FieldValueInvalid', value: new GoValue(`[]string{${JSON.stringify(asked)}}`), detail: `failed to allocate IP ${asked}: ${why}` });
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

    return (committed) => {
      if (!committed) return undo();
      // Committed: what the old object held and the new one does not is free again.
      if (oldIp && oldIp !== newIp) this.ips.release(oldIp);
      for (const p of oldPorts) if (!mine.has(p)) this.ports.release(p);
    };
  }
}
