// The per-kind strategies. Kinds not named here use the generic Strategy (or SpecStrategy
// for the workload groups, whose objects carry a generation).
import { APIServiceStrategy } from '../aggregator/apiservice-strategy.js';
import { HorizontalPodAutoscalerStrategy } from './autoscaling-strategy.js';
import { Strategy, SpecStrategy, type FieldError, type StrategyContext } from './strategy.js';
import type { Cacher } from '../storage/cacher.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import type { NameRule } from './validation.js';
import { ServiceAllocator } from './allocators/service-allocator.js';
import { IpAddressStrategy, ServiceCidrStrategy } from './service-cidr-strategies.js';
import * as kinds from './kind-strategies.js';
import { CrdStrategy } from './crd/crd-strategy.js';
import { CsrStrategy } from './csr-strategy.js';
import { defaultService, defaultServiceFamilies, dropServiceTypeDependentFields } from './defaults/core.js';
import { validateService } from './validation/core.js';
import {
  defaultMutatingWebhookConfiguration,
  defaultValidatingAdmissionPolicy,
  defaultValidatingAdmissionPolicyBinding,
  defaultValidatingWebhookConfiguration,
} from './defaults/admission.js';
import { defaultBinding } from './defaults/rbac.js';
import { defaultCsiDriver, defaultFlowSchema, defaultLimitRange, defaultPriorityLevelConfiguration } from './defaults/other.js';
import { validateMutatingAdmissionPolicy, validateMutatingAdmissionPolicyBinding, validateValidatingAdmissionPolicyBinding, validateMutatingWebhookConfiguration, validateValidatingAdmissionPolicy, validateValidatingWebhookConfiguration } from './validation/admission.js';
import { validateBinding, validateBindingUpdate, validateRole } from './validation/rbac.js';

/** Kinds whose status strategy calls ResetObjectMetaForStatus: their status writes change no metadata. */
const STATUS_RESETS_METADATA = new Set([
  'validatingadmissionpolicies.admissionregistration.k8s.io',
  'mutatingadmissionpolicies.admissionregistration.k8s.io',
  'resourceclaims.resource.k8s.io',
  'storageversions.internal.apiserver.k8s.io',
]);

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
  override prepareForStatusUpdate(obj: any, old: any): void {
    super.prepareForStatusUpdate(obj, old);
    // SetDefaults_NamespaceStatus: an empty phase decodes as Active.
    if (obj.status && typeof obj.status === 'object' && !obj.status.phase) obj.status.phase = 'Active';
  }
  /** kube's ValidateNamespaceStatusUpdate (its field path is spelled status.Phase). */
  override validateStatusUpdate(obj: any): FieldError[] {
    const phase = obj.status?.phase ?? '';
    if (!obj.metadata.deletionTimestamp) {
      if (phase !== 'Active') return [{ field: 'status.Phase', type: 'FieldValueInvalid', value: phase, detail: "may only be 'Active' if `deletionTimestamp` is empty" }];
    } else if (phase !== 'Terminating') {
      return [{ field: 'status.Phase', type: 'FieldValueInvalid', value: phase, detail: "may only be 'Terminating' if `deletionTimestamp` is not empty" }];
    }
    return [];
  }
}

/** Services: defaults here; ClusterIPs and NodePorts come from the allocator (src/registry/allocators). */
class ServiceStrategy extends Strategy {
  override allowCreateOnUpdate = true;
  override handlesRequired = true;

  constructor(readonly allocator: ServiceAllocator) {
    super();
  }

  override prepareForCreate(obj: any): void {
    defaultService(obj);
    const spec = (obj.spec ??= {});
    spec.type ??= 'ClusterIP';
    spec.sessionAffinity ??= 'None';
    if (spec.type !== 'ExternalName') spec.internalTrafficPolicy ??= 'Cluster';
    for (const p of spec.ports ?? []) {
      p.protocol ??= 'TCP';
      if (p.targetPort === undefined && spec.type !== 'ExternalName') p.targetPort = p.port;
    }
    if (spec.type === 'NodePort' || spec.type === 'LoadBalancer') spec.externalTrafficPolicy ??= 'Cluster';
  }

  /** IP families are the service storage's (kube's beforeCreate), not the request's: no manager owns them. */
  override admitCreate(obj: any): void {
    defaultServiceFamilies(obj);
    obj.status = { loadBalancer: {} };
  }

  override prepareForUpdate(obj: any, old: any): void {
    defaultService(obj);
    dropServiceTypeDependentFields(obj, old);
    const spec = (obj.spec ??= {});
    // Allocated values a client left out are kept only while both need an address (kube's
    // patchAllocatedValues); a switch to ExternalName gives them up.
    const keepAddress = spec.type !== 'ExternalName' && old.spec?.type !== 'ExternalName';
    if (keepAddress && !spec.clusterIP && old.spec?.clusterIP) spec.clusterIP = old.spec.clusterIP;
    if (keepAddress && !spec.clusterIPs && old.spec?.clusterIPs) spec.clusterIPs = old.spec.clusterIPs;
    for (const k of ['ipFamilies', 'ipFamilyPolicy', 'internalTrafficPolicy', 'sessionAffinity', 'type']) {
      if (!keepAddress && (k === 'ipFamilies' || k === 'ipFamilyPolicy')) continue;
      if (spec[k] === undefined && old.spec?.[k] !== undefined) spec[k] = old.spec[k];
    }
    // Leaving ExternalName: the families are initialized as on create (kube's initIPFamilyFields).
    if (old.spec?.type === 'ExternalName' && spec.type !== 'ExternalName') defaultServiceFamilies(obj);
  }

  override validate(obj: any): FieldError[] {
    return validateService(obj);
  }

  override validateUpdate(obj: any, old: any): FieldError[] {
    if (old.spec?.clusterIP && obj.spec?.clusterIP && obj.spec.clusterIP !== old.spec.clusterIP && obj.spec.type !== 'ExternalName') {
      return [{ field: 'spec.clusterIPs[0]', type: 'FieldValueInvalid', value: obj.spec.clusterIP, detail: 'may not change once set' }];
    }
    return [];
  }

  override beginCreate(obj: any, ctx: StrategyContext): (committed: boolean) => void | Promise<void> {
    return this.allocator.allocateCreate(obj, ctx.dryRun);
  }

  override beginUpdate(obj: any, old: any, ctx: StrategyContext): (committed: boolean) => void | Promise<void> {
    return this.allocator.allocateUpdate(obj, old, ctx.dryRun);
  }

  override afterDelete(obj: any): Promise<void> {
    return this.allocator.release(obj);
  }
}

/** RBAC kinds: bindings defaulted (roleRef and subject groups) and validated as kube's rbac validation. */
class RbacStrategy extends Strategy {
  override handlesRequired = true;
  constructor(
    private readonly binding: boolean,
    private readonly namespaced: boolean,
  ) {
    super();
  }
  override prepareForCreate(obj: any): void {
    if (this.binding) defaultBinding(obj);
  }
  override prepareForUpdate(obj: any): void {
    if (this.binding) defaultBinding(obj);
  }
  override validate(obj: any): FieldError[] {
    return this.binding ? validateBinding(obj, this.namespaced) : validateRole(obj, this.namespaced);
  }
  override validateUpdate(obj: any, old: any): FieldError[] {
    return this.binding ? validateBindingUpdate(obj, old) : [];
  }
}

function rbacStrategy(resource: string): Strategy {
  return new RbacStrategy(resource.endsWith('bindings'), !resource.startsWith('cluster'));
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
  /** Set by the server: recreates the default ServiceCIDR after it is deleted. */
  onDefaultServiceCidrDeleted: () => void = () => {};
  private pods: kinds.PodStrategy;

  constructor(cacher: Cacher, opts: StrategyOptions) {
    // The allocator starts from what the stored Services hold (the caches are loaded by now).
    this.serviceAllocator = new ServiceAllocator(opts.serviceClusterIpRange, opts.serviceNodePortRange);
    this.serviceAllocator.load(Array.from(cacher.cache('services').items.values(), (e) => entryObject(e)));
    this.service = new ServiceStrategy(this.serviceAllocator);
    this.pods = new kinds.PodStrategy();
  }

  get(group: string, resource: string): { strategy: Strategy; nameRule: NameRule } {
    const key = `${resource}.${group}`;
    let s = this.cache.get(key);
    if (s) return s;
    s = this.make(group, resource);
    if (CREATE_ON_UPDATE.has(key)) s.strategy.allowCreateOnUpdate = true;
    if (STATUS_RESETS_METADATA.has(key)) s.strategy.statusResetsMetadata = true;
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
          return { strategy: this.pods, nameRule: 'subdomain' };
        case 'podtemplates':
          return { strategy: new kinds.PodTemplateStrategy(), nameRule: 'subdomain' };
        case 'secrets':
          return { strategy: new kinds.SecretStrategy(), nameRule: 'subdomain' };
        case 'configmaps':
          return { strategy: new kinds.ConfigMapStrategy(), nameRule: 'subdomain' };
        case 'persistentvolumeclaims':
          return { strategy: new kinds.PvcStrategy(), nameRule: 'subdomain' };
        case 'persistentvolumes':
          return { strategy: new kinds.PvStrategy(), nameRule: 'subdomain' };
        case 'events':
          // kube does not check a core/v1 Event's name beyond the path rules.
          return { strategy: new kinds.EventStrategy(''), nameRule: 'path' };
        case 'endpoints':
          return { strategy: kinds.endpointsStrategy(), nameRule: 'subdomain' };
        case 'limitranges':
          return { strategy: new kinds.DefaultingStrategy(defaultLimitRange), nameRule: 'subdomain' };
        case 'replicationcontrollers':
          return { strategy: new kinds.ReplicationControllerStrategy(), nameRule: 'subdomain' };
      }
    }
    if (group === 'apps') {
      switch (resource) {
        case 'deployments':
          return { strategy: new kinds.DeploymentStrategy(), nameRule: 'subdomain' };
        case 'replicasets':
          return { strategy: new kinds.ReplicaSetStrategy(), nameRule: 'subdomain' };
        case 'statefulsets':
          return { strategy: new kinds.StatefulSetStrategy(), nameRule: 'subdomain' };
        case 'daemonsets':
          return { strategy: new kinds.DaemonSetStrategy(), nameRule: 'subdomain' };
      }
    }
    if (group === 'batch' && resource === 'jobs') return { strategy: new kinds.JobStrategy(), nameRule: 'subdomain' };
    if (group === 'batch' && resource === 'cronjobs') return { strategy: new kinds.CronJobStrategy(), nameRule: 'subdomain' };
    if (group === 'autoscaling' && resource === 'horizontalpodautoscalers') return { strategy: new HorizontalPodAutoscalerStrategy(), nameRule: 'subdomain' };
    if (group === 'coordination.k8s.io' && resource === 'leases') return { strategy: new kinds.LeaseStrategy(), nameRule: 'subdomain' };
    if (group === 'events.k8s.io' && resource === 'events') return { strategy: new kinds.EventStrategy('events.k8s.io'), nameRule: 'subdomain' };
    if (group === 'discovery.k8s.io' && resource === 'endpointslices') return { strategy: kinds.endpointSliceStrategy(), nameRule: 'subdomain' };
    if (group === 'networking.k8s.io' && resource === 'networkpolicies') return { strategy: kinds.networkPolicyStrategy(), nameRule: 'subdomain' };
    if (group === 'apiextensions.k8s.io' && resource === 'customresourcedefinitions') return { strategy: new CrdStrategy(), nameRule: 'subdomain' };
    if (group === 'certificates.k8s.io' && resource === 'certificatesigningrequests') return { strategy: new CsrStrategy(), nameRule: 'path' };
    if (group === 'apiregistration.k8s.io' && resource === 'apiservices') return { strategy: new APIServiceStrategy(), nameRule: 'path' };
    if (group === 'networking.k8s.io' && resource === 'ingresses') return { strategy: kinds.ingressStrategy(), nameRule: 'subdomain' };
    if (group === 'networking.k8s.io' && resource === 'ingressclasses') return { strategy: kinds.ingressClassStrategy(), nameRule: 'subdomain' };
    if (group === 'policy' && resource === 'poddisruptionbudgets') return { strategy: kinds.podDisruptionBudgetStrategy(), nameRule: 'subdomain' };
    if (group === 'storage.k8s.io' && resource === 'storageclasses') return { strategy: kinds.storageClassStrategy(), nameRule: 'subdomain' };
    if (group === 'scheduling.k8s.io' && resource === 'priorityclasses') return { strategy: kinds.priorityClassStrategy(), nameRule: 'subdomain' };
    if (group === 'networking.k8s.io' && resource === 'ipaddresses') return { strategy: new IpAddressStrategy(this.serviceAllocator), nameRule: 'path' };
    if (group === 'networking.k8s.io' && resource === 'servicecidrs') return { strategy: new ServiceCidrStrategy(() => this.onDefaultServiceCidrDeleted()), nameRule: 'subdomain' };
    if (group === 'rbac.authorization.k8s.io') return { strategy: rbacStrategy(resource), nameRule: 'path' };
    if (group === 'admissionregistration.k8s.io') {
      switch (resource) {
        case 'validatingwebhookconfigurations':
          return { strategy: kinds.validatedStrategy(validateValidatingWebhookConfiguration, undefined, defaultValidatingWebhookConfiguration), nameRule: 'subdomain' };
        case 'mutatingwebhookconfigurations':
          return { strategy: kinds.validatedStrategy(validateMutatingWebhookConfiguration, undefined, defaultMutatingWebhookConfiguration), nameRule: 'subdomain' };
        case 'validatingadmissionpolicies':
          return { strategy: kinds.validatedStrategy(validateValidatingAdmissionPolicy, undefined, defaultValidatingAdmissionPolicy), nameRule: 'subdomain' };
        case 'validatingadmissionpolicybindings':
          return { strategy: kinds.validatedStrategy(validateValidatingAdmissionPolicyBinding, undefined, defaultValidatingAdmissionPolicyBinding), nameRule: 'subdomain' };
        // (v1alpha1 SetDefaults: the same as the validating kinds')
        case 'mutatingadmissionpolicies':
          return { strategy: kinds.validatedStrategy(validateMutatingAdmissionPolicy, undefined, defaultValidatingAdmissionPolicy), nameRule: 'subdomain' };
        case 'mutatingadmissionpolicybindings':
          return { strategy: kinds.validatedStrategy(validateMutatingAdmissionPolicyBinding, undefined, defaultValidatingAdmissionPolicyBinding), nameRule: 'subdomain' };
      }
    }
    if (group === 'storage.k8s.io' && resource === 'csidrivers') return { strategy: new kinds.DefaultingStrategy(defaultCsiDriver, true), nameRule: 'subdomain' };
    if (group === 'flowcontrol.apiserver.k8s.io' && resource === 'flowschemas') return { strategy: new kinds.DefaultingStrategy(defaultFlowSchema, true), nameRule: 'subdomain' };
    if (group === 'flowcontrol.apiserver.k8s.io' && resource === 'prioritylevelconfigurations') {
      return { strategy: new kinds.DefaultingStrategy(defaultPriorityLevelConfiguration, true), nameRule: 'subdomain' };
    }
    if (SPEC_GROUPS.has(group)) return { strategy: new SpecStrategy(), nameRule: 'subdomain' };
    return { strategy: new Strategy(), nameRule: 'subdomain' };
  }
}
