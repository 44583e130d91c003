// ClusterIP and NodePort allocation for Services (kube-apiserver's service REST
// allocation: allocateCreate / allocateUpdate / release).
//
// Thread ownership: the front thread. The state is derived from the stored Services at
// start-up and then kept by the store's create/update/delete hooks: a value is reserved
// synchronously before the commit is sent, kept when it succeeds, and released when the
// commit fails, for a dry run, and when the Service is deleted.
//
// Several replicas on one storage (shared): the in-memory sets are then this replica's view
// only, and storage decides. Before the Service is stored, its new ClusterIP is claimed by
// creating its IPAddress object (kube's MultiCIDRServiceAllocator order: AlreadyExists means
// another replica has it, and a dynamic address is replaced by another), and its new
// NodePorts are claimed in storage's RangeAllocation (NodePortClaims, a compare-and-swap:
// a port another replica holds makes a dynamic one be replaced, an asked one refused). The
// view follows what the other replicas write through the caches' feed (follow()).
import { errors, GoValue, StatusError } from '../../errors.js';
import type { FieldError } from '../strategy.js';
import { IpAllocator, PortAllocator } from './range-allocator.js';
import { IpAddressObjects, LABEL_MANAGED_BY, IPALLOCATOR_NAME, type ServiceRef } from './ip-address-objects.js';
import type { Cacher } from '../../storage/cacher.js';
import type { NodePortClaims } from '../../storage/etcd/range-allocation.js';
import { entryObject } from '../../../workers/watch/watch-cache.js';

/**
 * Called once the write's outcome is known: true when it was committed. claim, when set, is
 * awaited before the commit (shared storage: the reservations claimed in storage); when it
 * throws, the write is not sent and the function is called with false.
 */
export type Finish = ((committed: boolean) => void | Promise<void>) & { claim?: () => Promise<void> };

/** How many addresses or ports a claim tries when other replicas hold the ones picked. */
const CLAIM_TRIES = 32;
/** kube's repair loops: how many passes in a row must find a NodePort leaked before it is freed */
const LEAK_PASSES = 3;
/** An IPAddress younger than this may belong to a Service another replica is storing now: repair leaves it. */
const REPAIR_GRACE_MS = 60_000;

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
  /** set (server.ts) when replicas share storage: reservations are claimed in storage before the commit */
  shared: { nodePorts?: NodePortClaims } | undefined;

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
      // (shared storage: a new address is claimed before its Service is stored)
      const young = this.shared && Date.now() - Date.parse(o.metadata?.creationTimestamp ?? '') < REPAIR_GRACE_MS;
      if (young) {
        if (this.ips.contains(ip)) this.ips.allocate(ip);
      } else if (o.metadata?.labels?.[LABEL_MANAGED_BY] === IPALLOCATOR_NAME && o.spec?.parentRef?.resource === 'services' && (o.spec.parentRef.group ?? '') === '') {
        await this.objects.remove(ip);
      } else if (this.ips.contains(ip)) {
        this.ips.allocate(ip);
      }
    }
    for (const [ip, owner] of this.owners) if (!stored.has(ip)) await this.objects.create(ip, owner);
  }

  /**
   * Shared storage: this view follows the Services and IPAddress objects other replicas
   * write (their addresses and ports are taken here too; what they release is free here
   * too). A stale view never hands out a value twice: storage's claim decides.
   */
  follow(cacher: Cacher): void {
    if (!this.shared) return;
    const ipGr = 'ipaddresses.networking.k8s.io';
    for (const e of cacher.cache(ipGr).items.values()) if (this.ips.contains(e.name)) this.ips.allocate(e.name);
    for (const e of cacher.cache('services').items.values()) this.noteService(entryObject(e), undefined);
    cacher.observe((cache, evs) => {
      if (cache.gr === ipGr) {
        for (const ev of evs) {
          const ip = ev.entry.name;
          if (!this.ips.contains(ip)) continue;
          if (ev.type !== 'DELETED') this.ips.allocate(ip);
          else if (!this.owners.has(ip)) this.ips.release(ip);
        }
      } else if (cache.gr === 'services') {
        for (const ev of evs) {
          const obj = entryObject(ev.entry);
          if (ev.type === 'DELETED') {
            for (const p of heldPorts(obj?.spec)) this.ports.release(p);
            const ip = heldIp(obj?.spec);
            const o = ip && this.owners.get(ip);
            if (o && o.namespace === ev.entry.ns && o.name === ev.entry.name) this.owners.delete(ip!);
          } else this.noteService(obj, ev.prev && entryObject(ev.prev));
        }
      }
    });
  }

  private noteService(svc: any, prev: any | undefined): void {
    const ip = heldIp(svc?.spec);
    if (ip) this.owners.set(ip, refOf(svc));
    for (const p of heldPorts(svc?.spec)) this.ports.allocate(p);
    if (prev) {
      const now = heldPorts(svc?.spec);
      for (const p of heldPorts(prev.spec)) if (!now.has(p)) this.ports.release(p);
    }
  }

  /** ports set in storage and held by no Service, with the number of repair passes that found them so */
  private leakedPorts = new Map<number, number>();

  /**
   * Shared storage (kube's NodePort repair loop, run by the leader): the RangeAllocation is
   * made to hold every port a stored Service holds, and a port set there that no Service
   * holds (a replica died between its claim and its commit) is cleared once LEAK_PASSES
   * passes in a row found it so: a claim in flight for a Service about to be stored is
   * never cleared (it lasts milliseconds; passes are minutes apart).
   */
  async repairNodePorts(services: Iterable<any>): Promise<void> {
    const claims = this.shared?.nodePorts;
    if (!claims) return;
    const held = new Set<number>();
    for (const svc of services) for (const p of heldPorts(svc?.spec)) if (p >= this.ports.min && p <= this.ports.max) held.add(p);
    const stored = await claims.snapshot();
    const missing = [...held].filter((p) => !stored.has(p));
    for (const p of missing) await claims.claim([p]);
    const leaks = new Map<number, number>();
    const clear: number[] = [];
    for (const p of stored) {
      if (held.has(p)) continue;
      const n = (this.leakedPorts.get(p) ?? 0) + 1;
      if (n >= LEAK_PASSES) clear.push(p);
      else leaks.set(p, n);
    }
    this.leakedPorts = leaks;
    if (clear.length) {
      await claims.release(clear);
      for (const p of clear) if (!held.has(p)) this.ports.release(p);
    }
  }

  /** Releases everything a deleted Service held; its IPAddress goes before the address is free. */
  async release(svc: any): Promise<void> {
    const ports = heldPorts(svc?.spec);
    for (const p of ports) this.ports.release(p);
    const ip = heldIp(svc?.spec);
    if (ip) await this.releaseIp(ip);
    await this.releaseClaimedPorts([...ports]);
  }

  private async releaseClaimedPorts(ports: number[]): Promise<void> {
    if (!this.shared?.nodePorts || ports.length === 0) return;
    try {
      await this.shared.nodePorts.release(ports);
    } catch (e) {
      console.warn(`W portallocator: cannot release ${ports.join(',')} in storage: ${(e as Error).message}`);
    }
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
    let dynamicIp = false;
    // (the dynamic address is released by name: a claim may replace it)
    taken.push(() => {
      if (dynamicIp && newIp) this.ips.release(newIp);
    });
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
        dynamicIp = true;
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
    const dynamicPorts = new Set<number>();
    const next = (): number => {
      const p = this.ports.allocateNext();
      if (p === null) fail(errors.internal('failed to allocate a nodePort: range is full'));
      mine.add(p!);
      dynamicPorts.add(p!);
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

    // Shared storage: what is claimed in storage before the commit, undone if it fails.
    let ipClaimed = false;
    let portsClaimed: number[] = [];
    const finish: Finish = async (committed) => {
      if (!committed) {
        undo();
        if (ipClaimed && newIp) await this.objects.remove(newIp);
        await this.releaseClaimedPorts(portsClaimed);
        return;
      }
      // Committed: what the old object held and the new one does not is free again; a new
      // address gets its IPAddress object (once the Service is stored, as its parent; with
      // shared storage it was made before, as the claim).
      const dropped = [...oldPorts].filter((p) => !mine.has(p));
      for (const p of dropped) this.ports.release(p);
      if (newIp && newIp !== oldIp) {
        const ref = refOf(svc);
        this.owners.set(newIp, ref);
        if (!ipClaimed) await this.objects.create(newIp, ref);
      }
      if (oldIp && oldIp !== newIp) await this.releaseIp(oldIp);
      await this.releaseClaimedPorts(dropped);
    };
    if (this.shared && !dryRun) {
      finish.claim = async () => {
        if (newIp && newIp !== oldIp) {
          const ref = refOf(svc);
          for (let tries = 1; ; tries++) {
            if (await this.objects.claim(newIp, ref)) {
              ipClaimed = true;
              break;
            }
            // another replica holds it: it stays taken in this view
            const held = newIp;
            if (!dynamicIp || tries >= CLAIM_TRIES) {
              if (dynamicIp) newIp = undefined;
              throw dynamicIp
                ? errors.internal('failed to allocate a serviceIP: range is full')
                : errors.invalid('Service', '', name, [
                    { field: 'spec.clusterIPs', type: 'FieldValueInvalid', value: new GoValue(`[]string{${JSON.stringify(held)}}`), detail: `failed to allocate IP ${held}: provided IP is already allocated` },
                  ]);
            }
            const ip = this.ips.allocateNext();
            if (ip === null) {
              newIp = undefined;
              throw errors.internal('failed to allocate a serviceIP: range is full');
            }
            newIp = ip;
            spec.clusterIP = ip;
            if (Array.isArray(spec.clusterIPs) && spec.clusterIPs[0] === held) spec.clusterIPs[0] = ip;
          }
        }
        const claims = this.shared?.nodePorts;
        if (!claims) return;
        const wanted = () => [...mine].filter((p) => !oldPorts.has(p));
        for (let tries = 1; ; tries++) {
          const want = wanted();
          const held = await claims.claim(want);
          if (held.length === 0) {
            portsClaimed = want;
            return;
          }
          const refused = held.filter((p) => !dynamicPorts.has(p));
          if (refused.length || tries >= CLAIM_TRIES) {
            throw refused.length
              ? errors.invalid('Service', '', name, refused.map((p) => {
                  const i = ports.findIndex((sp) => sp?.nodePort === p);
                  return { field: i >= 0 ? `spec.ports[${i}].nodePort` : 'spec.healthCheckNodePort', type: 'FieldValueInvalid' as const, value: p, detail: 'provided port is already allocated' };
                }))
              : errors.internal('failed to allocate a nodePort: range is full');
          }
          // another replica holds these: they stay taken in this view; others are picked
          for (const p of held) {
            mine.delete(p);
            dynamicPorts.delete(p);
            const q = next();
            for (const sp of ports) if (sp?.nodePort === p) sp.nodePort = q;
            if (spec.healthCheckNodePort === p) spec.healthCheckNodePort = q;
          }
        }
      };
    }
    return finish;
  }
}
