// The per-kind strategies. Kinds not named here use the generic Strategy (or SpecStrategy
// for the workload groups, whose objects carry a generation).
import { Strategy, SpecStrategy, type FieldError, type StrategyContext } from './strategy.js';
import type { Coordinator } from '../coordinator/coordinator.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import type { NameRule } from './validation.js';
import { ServiceAllocator } from './allocators/service-allocator.js';

class NamespaceStrategy extends Strategy {
  override prepareForCreate(obj: any): void {
    obj.spec = { ...(obj.spec ?? {}), finalizers: ['kubernetes'] };
    obj.status = { phase: 'Active' };
    this.canonicalize(obj);
  }
  override prepareForUpdate(obj: any, old: any): void {
    // spec.finalizers changes only through namespaces/finalize; status through namespaces/status.
    obj.spec = structuredClone(old.spec ?? {});
  }
  override canonicalize(obj: any): void {
    obj.metadata.labels = { ...(obj.metadata.labels ?? {}), 'kubernetes.io/metadata.name': obj.metadata.name };
  }
}

/** Services: defaults here; ClusterIPs and NodePorts come from the allocator (src/registry/allocators). */
class ServiceStrategy extends Strategy {
  override allowCreateOnUpdate = true;

  constructor(readonly allocator: ServiceAllocator) {
    super();
  }

  override prepareForCreate(obj: any): void {
    const spec = (obj.spec ??= {});
    spec.type ??= 'ClusterIP';
    spec.sessionAffinity ??= 'None';
    if (spec.type !== 'ExternalName') {
      spec.ipFamilies ??= ['IPv4'];
      spec.ipFamilyPolicy ??= 'SingleStack';
      spec.internalTrafficPolicy ??= 'Cluster';
    }
    for (const p of spec.ports ?? []) {
      p.protocol ??= 'TCP';
      if (p.targetPort === undefined && spec.type !== 'ExternalName') p.targetPort = p.port;
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
    if (old.spec?.clusterIP && obj.spec?.clusterIP && obj.spec.clusterIP !== old.spec.clusterIP && obj.spec.type !== 'ExternalName') {
      return [{ field: 'spec.clusterIPs[0]', type: 'FieldValueInvalid', value: obj.spec.clusterIP, detail: 'may not change once set' }];
    }
    return [];
  }

  override beginCreate(obj: any): (committed: boolean) => void {
    return this.allocator.allocateCreate(obj);
  }

  override beginUpdate(obj: any, old: any): (committed: boolean) => void {
    return this.allocator.allocateUpdate(obj, old);
  }

  override afterDelete(obj: any): void {
    this.allocator.release(obj);
  }
}

class PodStrategy extends Strategy {
  override returnDeletedObject = true;
  /** A bound pod gets its grace period; an unscheduled or finished one goes at once (as kube's pod strategy). */
  override checkGracefulDelete(obj: any, requested: number | undefined): number {
    let period = requested ?? obj?.spec?.terminationGracePeriodSeconds ?? 30;
    if (!obj?.spec?.nodeName) period = 0;
    const phase = obj?.status?.phase;
    if (phase === 'Failed' || phase === 'Succeeded') period = 0;
    return period;
  }
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

/** v1 ReplicationControllers orphan their pods unless told otherwise, for compatibility (as kube). */
class ReplicationControllerStrategy extends SpecStrategy {
  override defaultGarbageCollectionPolicy(version: string): 'DeleteDependents' | 'OrphanDependents' {
    return version === 'v1' ? 'OrphanDependents' : 'DeleteDependents';
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

/** The kinds whose kube-apiserver strategy allows a PUT to create (AllowCreateOnUpdate), as resource.group. */
const CREATE_ON_UPDATE = new Set([
  'services.',
  'endpoints.',
  'events.',
  'limitranges.',
  'events.events.k8s.io',
  'leases.coordination.k8s.io',
  'roles.rbac.authorization.k8s.io',
  'rolebindings.rbac.authorization.k8s.io',
  'clusterroles.rbac.authorization.k8s.io',
  'clusterrolebindings.rbac.authorization.k8s.io',
  'runtimeclasses.node.k8s.io',
]);

export interface StrategyOptions {
  serviceClusterIpRange: string;
  serviceNodePortRange: { min: number; max: number };
}

export class StrategyRegistry {
  private cache = new Map<string, { strategy: Strategy; nameRule: NameRule }>();
  private service: ServiceStrategy;
  readonly serviceAllocator: ServiceAllocator;

  constructor(coord: Coordinator, opts: StrategyOptions) {
    // The allocator starts from what the stored Services hold (the caches are loaded by now).
    this.serviceAllocator = new ServiceAllocator(opts.serviceClusterIpRange, opts.serviceNodePortRange);
    this.serviceAllocator.load(Array.from(coord.cache('services').items.values(), (e) => entryObject(e)));
    this.service = new ServiceStrategy(this.serviceAllocator);
  }

  get(group: string, resource: string): { strategy: Strategy; nameRule: NameRule } {
    const key = `${resource}.${group}`;
    let s = this.cache.get(key);
    if (s) return s;
    s = this.make(group, resource);
    if (CREATE_ON_UPDATE.has(key)) s.strategy.allowCreateOnUpdate = true;
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
          return { strategy: new ReplicationControllerStrategy(), nameRule: 'subdomain' };
      }
    }
    if (group === 'apps' && resource === 'deployments') return { strategy: new DeploymentStrategy(), nameRule: 'subdomain' };
    if (group === 'coordination.k8s.io' && resource === 'leases') return { strategy: new CreateOnUpdateStrategy(), nameRule: 'subdomain' };
    if (group === 'rbac.authorization.k8s.io') return { strategy: new Strategy(), nameRule: 'path' };
    if (SPEC_GROUPS.has(group)) return { strategy: new SpecStrategy(), nameRule: 'subdomain' };
    return { strategy: new Strategy(), nameRule: 'subdomain' };
  }
}
