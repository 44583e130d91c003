// The per-kind strategies. Kinds not named here use the generic Strategy (or SpecStrategy
// for the workload groups, whose objects carry a generation).
import { Strategy, SpecStrategy, type FieldError, type StrategyContext } from './strategy.js';
import type { Coordinator } from '../coordinator/coordinator.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import type { NameRule } from './validation.js';

class NamespaceStrategy extends Strategy {
  override prepareForCreate(obj: any): void {
    obj.spec = { ...(obj.spec ?? {}), finalizers: ['kubernetes'] };
    obj.status = { phase: 'Active' };
    this.canonicalize(obj);
  }
  override prepareForUpdate(obj: any, old: any): void {
    obj.spec = structuredClone(old.spec ?? {});
    obj.status = structuredClone(old.status ?? { phase: 'Active' });
  }
  override canonicalize(obj: any): void {
    obj.metadata.labels = { ...(obj.metadata.labels ?? {}), 'kubernetes.io/metadata.name': obj.metadata.name };
  }
}

/** ClusterIPs and NodePorts. A first cut: issue #6 brings a real allocator with its own state. */
class ServiceStrategy extends Strategy {
  override allowCreateOnUpdate = true;
  private reserved = new Map<string, number>();

  constructor(
    private coord: Coordinator,
    private cidr: { base: number; size: number },
    private nodePorts: { min: number; max: number },
  ) {
    super();
  }

  private used(): { ips: Set<string>; ports: Set<number> } {
    const ips = new Set<string>();
    const ports = new Set<number>();
    const now = Date.now();
    for (const [k, t] of this.reserved) {
      if (now - t > 30_000) this.reserved.delete(k);
      else if (k.startsWith('port:')) ports.add(Number(k.slice(5)));
      else ips.add(k);
    }
    for (const e of this.coord.cache('services').items.values()) {
      const s = entryObject(e)?.spec;
      if (s?.clusterIP) ips.add(s.clusterIP);
      for (const p of s?.ports ?? []) if (p.nodePort) ports.add(p.nodePort);
    }
    return { ips, ports };
  }

  private allocateIp(used: Set<string>): string {
    const { base, size } = this.cidr;
    const start = 1 + Math.floor(Math.random() * (size - 2));
    for (let i = 0; i < size - 2; i++) {
      const n = base + 1 + ((start - 1 + i) % (size - 2));
      const ip = [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
      if (ip.endsWith('.0') && i === 0) continue;
      if (!used.has(ip)) {
        this.reserved.set(ip, Date.now());
        return ip;
      }
    }
    throw new Error('range is full');
  }

  override prepareForCreate(obj: any): void {
    const spec = (obj.spec ??= {});
    spec.type ??= 'ClusterIP';
    spec.sessionAffinity ??= 'None';
    const used = this.used();
    if (spec.type !== 'ExternalName') {
      if (!spec.clusterIP) spec.clusterIP = this.allocateIp(used.ips);
      spec.clusterIPs ??= [spec.clusterIP];
      spec.ipFamilies ??= spec.clusterIP === 'None' ? ['IPv4'] : ['IPv4'];
      spec.ipFamilyPolicy ??= 'SingleStack';
      spec.internalTrafficPolicy ??= 'Cluster';
    }
    for (const p of spec.ports ?? []) {
      p.protocol ??= 'TCP';
      if (p.targetPort === undefined && spec.type !== 'ExternalName') p.targetPort = p.port;
      if ((spec.type === 'NodePort' || spec.type === 'LoadBalancer') && !p.nodePort) {
        for (let tries = 0; tries < 5000; tries++) {
          const port = this.nodePorts.min + Math.floor(Math.random() * (this.nodePorts.max - this.nodePorts.min + 1));
          if (!used.ports.has(port)) {
            p.nodePort = port;
            used.ports.add(port);
            this.reserved.set('port:' + port, Date.now());
            break;
          }
        }
      }
    }
    if (spec.type === 'NodePort' || spec.type === 'LoadBalancer') spec.externalTrafficPolicy ??= 'Cluster';
    obj.status = { loadBalancer: {} };
  }

  override prepareForUpdate(obj: any, old: any): void {
    const spec = (obj.spec ??= {});
    if (!spec.clusterIP && old.spec?.clusterIP) spec.clusterIP = old.spec.clusterIP;
    if (!spec.clusterIPs && old.spec?.clusterIPs) spec.clusterIPs = old.spec.clusterIPs;
    for (const k of ['ipFamilies', 'ipFamilyPolicy', 'internalTrafficPolicy', 'sessionAffinity', 'type']) {
      if (spec[k] === undefined && old.spec?.[k] !== undefined) spec[k] = old.spec[k];
    }
  }

  override validateUpdate(obj: any, old: any): FieldError[] {
    if (old.spec?.clusterIP && obj.spec?.clusterIP && obj.spec.clusterIP !== old.spec.clusterIP) {
      return [{ field: 'spec.clusterIPs[0]', type: 'FieldValueInvalid', value: obj.spec.clusterIP, detail: 'may not change once set' }];
    }
    return [];
  }
}

class PodStrategy extends Strategy {
  override returnDeletedObject = true;
  override prepareForCreate(obj: any): void {
    obj.status = { phase: 'Pending', qosClass: 'BestEffort' };
  }
}

class DeploymentStrategy extends SpecStrategy {
  override prepareForCreate(obj: any, _ctx: StrategyContext): void {
    const spec = (obj.spec ??= {});
    spec.replicas ??= 1;
    spec.revisionHistoryLimit ??= 10;
    spec.progressDeadlineSeconds ??= 600;
    spec.strategy ??= {};
    spec.strategy.type ||= 'RollingUpdate';
    if (spec.strategy.type === 'RollingUpdate') {
      const ru = (spec.strategy.rollingUpdate ??= {});
      ru.maxUnavailable ??= '25%';
      ru.maxSurge ??= '25%';
    }
    obj.status = {};
  }
}

class SecretStrategy extends Strategy {
  override prepareForCreate(obj: any): void {
    obj.type ??= 'Opaque';
  }
}

class CreateOnUpdateStrategy extends Strategy {
  override allowCreateOnUpdate = true;
}

const SPEC_GROUPS = new Set(['apps', 'batch', 'networking.k8s.io', 'policy', 'autoscaling', 'storage.k8s.io', 'admissionregistration.k8s.io', 'flowcontrol.apiserver.k8s.io']);

export interface StrategyOptions {
  serviceClusterIpRange: string;
  serviceNodePortRange: { min: number; max: number };
}

function parseCidr(cidr: string): { base: number; size: number } {
  const [ip, bits] = cidr.split('/');
  const n = ip.split('.').reduce((a, o) => (a << 8) + Number(o), 0) >>> 0;
  const size = 2 ** (32 - Number(bits));
  return { base: n - (n % size), size };
}

export class StrategyRegistry {
  private cache = new Map<string, { strategy: Strategy; nameRule: NameRule }>();
  private service: ServiceStrategy;

  constructor(coord: Coordinator, opts: StrategyOptions) {
    this.service = new ServiceStrategy(coord, parseCidr(opts.serviceClusterIpRange), opts.serviceNodePortRange);
  }

  get(group: string, resource: string): { strategy: Strategy; nameRule: NameRule } {
    const key = `${resource}.${group}`;
    let s = this.cache.get(key);
    if (s) return s;
    s = this.make(group, resource);
    this.cache.set(key, s);
    return s;
  }

  private make(group: string, resource: string): { strategy: Strategy; nameRule: NameRule } {
    if (group === '') {
      switch (resource) {
        case 'namespaces':
          return { strategy: new NamespaceStrategy(), nameRule: 'label' };
        case 'services':
          return { strategy: this.service, nameRule: 'dns1035' };
        case 'pods':
          return { strategy: new PodStrategy(), nameRule: 'subdomain' };
        case 'secrets':
          return { strategy: new SecretStrategy(), nameRule: 'subdomain' };
        case 'events':
        case 'endpoints':
        case 'limitranges':
          return { strategy: new CreateOnUpdateStrategy(), nameRule: 'subdomain' };
        case 'replicationcontrollers':
          return { strategy: new SpecStrategy(), nameRule: 'subdomain' };
      }
    }
    if (group === 'apps' && resource === 'deployments') return { strategy: new DeploymentStrategy(), nameRule: 'subdomain' };
    if (group === 'coordination.k8s.io' && resource === 'leases') return { strategy: new CreateOnUpdateStrategy(), nameRule: 'subdomain' };
    if (group === 'rbac.authorization.k8s.io') return { strategy: new Strategy(), nameRule: 'path' };
    if (SPEC_GROUPS.has(group)) return { strategy: new SpecStrategy(), nameRule: 'subdomain' };
    return { strategy: new Strategy(), nameRule: 'subdomain' };
  }
}
