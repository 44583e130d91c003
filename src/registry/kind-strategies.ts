// Strategies of the kinds whose defaults and validation follow kube-apiserver's
// (pods, workloads, jobs, config, leases, events). Each defaults an incoming object the way
// kube's decoder does (on create and on update alike), adds what a new object gets
// (status, admission defaults), validates, and checks what may not change on update.
// Stateless: one instance per kind, shared by every request on the front thread.
import { Strategy, SpecStrategy, keepOldMeta, type FieldError, type StrategyContext } from './strategy.js';
import { admitNewPod, defaultPod, defaultPodTemplate, podQosClass } from './defaults/pod.js';
import { defaultDaemonSet, defaultDeployment, defaultReplicaSet, defaultStatefulSet } from './defaults/apps.js';
import { defaultCronJob, defaultJob } from './defaults/batch.js';
import { defaultPv, defaultPvc, defaultPvcStatus, defaultSecret } from './defaults/core.js';
import { child, def, isObj } from './defaults/common.js';
import { defaultEndpointSlice, defaultEndpoints, defaultNetworkPolicy } from './defaults/network.js';
import { validatePodSpec, validatePodSpecUpdate, validatePodTemplate } from './validation/pod.js';
import {
  validateDaemonSet,
  validateDeployment,
  validateReplicaSet,
  validateSelectorUpdate,
  validateStatefulSet,
  validateStatefulSetUpdate,
  validateReplicationController,
  validateReplicationControllerUpdate,
} from './validation/apps.js';
import { generateJobSelector, validateCronJob, validateJob, validateJobUpdate, validateJobStatusUpdate } from './validation/batch.js';
import {
  validateConfigMap,
  validateConfigMapUpdate,
  validateEvent,
  validateLease,
  validateSecret,
  validateSecretUpdate,
} from './validation/core.js';
import { validatePv, validatePvc, validatePvcUpdate, validatePvUpdate, defaultStorageClass, validateStorageClass, validateStorageClassUpdate } from './validation/storage.js';
import { defaultPriorityClass, validatePdb, validatePriorityClass, validatePriorityClassUpdate } from './validation/policy.js';
import { defaultIngressClass, validateIngress, validateIngressCreate, validateIngressClass, validateIngressClassUpdate, validateNetworkPolicy } from './validation/network.js';

export class PodStrategy extends Strategy {
  override handlesRequired = true;
  override returnDeletedObject = true;
  /** A bound pod gets its grace period; an unscheduled or finished one goes at once (as kube's pod strategy). */
  override checkGracefulDelete(obj: any, requested: number | undefined): number {
    let period = requested ?? obj?.spec?.terminationGracePeriodSeconds ?? 30;
    if (!obj?.spec?.nodeName) period = 0;
    const phase = obj?.status?.phase;
    if (phase === 'Failed' || phase === 'Succeeded') period = 0;
    return period;
  }
  override prepareForCreate(obj: any, ctx: StrategyContext): void {
    defaultPod(obj, ctx.info);
  }
  /** The service account's name and the status at birth: owned by no manager. (Priority and DefaultTolerationSeconds are admission plugins, src/admission.) */
  override admitCreate(obj: any): void {
    admitNewPod(obj);
    obj.status = { phase: 'Pending', qosClass: podQosClass(obj.spec) };
  }
  override prepareForUpdate(obj: any, _old: any, ctx: StrategyContext): void {
    defaultPod(obj, ctx.info);
  }
  // pods/status may not touch owner references (old kubelets corrupted them); the QoS class
  // is set at creation and backfilled when a writer dropped it.
  override statusResetFields = [['f:spec'], ['f:metadata', 'f:deletionTimestamp'], ['f:metadata', 'f:ownerReferences']];
  override prepareForStatusUpdate(obj: any, old: any): void {
    super.prepareForStatusUpdate(obj, old);
    keepOldMeta(obj, old, 'ownerReferences');
    if (obj.status && typeof obj.status === 'object' && !obj.status.qosClass && old.status?.qosClass) obj.status.qosClass = old.status.qosClass;
  }
  override validate(obj: any): FieldError[] {
    return validatePodSpec(obj.spec, 'spec', true);
  }
  override validateUpdate(obj: any, old: any): FieldError[] {
    return validatePodSpecUpdate(obj.spec, old.spec);
  }
}

export class PodTemplateStrategy extends Strategy {
  override handlesRequired = true;
  override prepareForCreate(obj: any, ctx: StrategyContext): void {
    defaultPodTemplate(child(obj, 'template'), ctx.info);
  }
  override prepareForUpdate(obj: any, _old: any, ctx: StrategyContext): void {
    defaultPodTemplate(child(obj, 'template'), ctx.info);
  }
  override validate(obj: any): FieldError[] {
    return validatePodTemplate(obj.template, 'template');
  }
}

/** A workload of apps/v1: defaulter, validator, its status at birth, and its update rules. */
abstract class WorkloadStrategy extends SpecStrategy {
  override handlesRequired = true;
  protected abstract defaults(obj: any, ctx: StrategyContext): void;
  protected abstract initialStatus(): Record<string, unknown>;
  override prepareForCreate(obj: any, ctx: StrategyContext): void {
    this.defaults(obj, ctx);
    obj.status = this.initialStatus();
  }
  override prepareForUpdate(obj: any, _old: any, ctx: StrategyContext): void {
    this.defaults(obj, ctx);
  }
  override validateUpdate(obj: any, old: any): FieldError[] {
    return validateSelectorUpdate(obj, old);
  }
}

export class DeploymentStrategy extends WorkloadStrategy {
  // deployments/status keeps the stored labels too.
  override statusResetFields = [['f:spec'], ['f:metadata', 'f:labels']];
  override prepareForStatusUpdate(obj: any, old: any): void {
    super.prepareForStatusUpdate(obj, old);
    keepOldMeta(obj, old, 'labels');
  }
  protected defaults(obj: any, ctx: StrategyContext): void {
    defaultDeployment(obj, ctx.info);
  }
  protected initialStatus() {
    return {};
  }
  override validate(obj: any): FieldError[] {
    return validateDeployment(obj);
  }
}

export class ReplicaSetStrategy extends WorkloadStrategy {
  protected defaults(obj: any, ctx: StrategyContext): void {
    defaultReplicaSet(obj, ctx.info);
  }
  protected initialStatus() {
    return { replicas: 0 };
  }
  override validate(obj: any): FieldError[] {
    return validateReplicaSet(obj);
  }
}

export class StatefulSetStrategy extends WorkloadStrategy {
  protected defaults(obj: any, ctx: StrategyContext): void {
    defaultStatefulSet(obj, ctx.info);
  }
  protected initialStatus() {
    return { availableReplicas: 0, replicas: 0 };
  }
  override validate(obj: any): FieldError[] {
    return validateStatefulSet(obj);
  }
  override validateUpdate(obj: any, old: any): FieldError[] {
    return validateStatefulSetUpdate(obj, old);
  }
}

export class DaemonSetStrategy extends WorkloadStrategy {
  protected defaults(obj: any, ctx: StrategyContext): void {
    defaultDaemonSet(obj, ctx.info);
  }
  protected initialStatus() {
    return { currentNumberScheduled: 0, desiredNumberScheduled: 0, numberMisscheduled: 0, numberReady: 0 };
  }
  override validate(obj: any): FieldError[] {
    return validateDaemonSet(obj);
  }
}

export class JobStrategy extends SpecStrategy {
  override handlesRequired = true;
  override prepareForCreate(obj: any, ctx: StrategyContext): void {
    defaultJob(obj, ctx.info);
  }
  override admitCreate(obj: any): void {
    // kube's defaulter points the job's labels at the template's label map, which the
    // selector generation then extends: so the job carries the generated labels too. A
    // template without labels gets its map from the selector generation, and the job's
    // labels come from it when the stored job is next decoded (defaulted again): so kube
    // shows them on every read, the create response included. Done here, once. The
    // generated selector and labels belong to no manager.
    generateJobSelector(obj);
    const tl = obj.spec?.template?.metadata?.labels;
    const ml = obj.metadata.labels;
    if (tl && typeof tl === 'object' && !Array.isArray(tl) && Object.keys(tl).length > 0 && (!ml || typeof ml !== 'object' || Object.keys(ml).length === 0)) {
      obj.metadata.labels = { ...tl };
    }
    obj.status = {};
  }
  override validateStatusUpdate(obj: any, old: any): FieldError[] {
    return validateJobStatusUpdate(obj, old);
  }
  override prepareForUpdate(obj: any, _old: any, ctx: StrategyContext): void {
    if (defaultJob(obj, ctx.info)) obj.metadata.labels = { ...obj.spec.template.metadata.labels };
  }
  override validate(obj: any): FieldError[] {
    return validateJob(obj);
  }
  override validateUpdate(obj: any, old: any): FieldError[] {
    return validateJobUpdate(obj, old);
  }
}

export class CronJobStrategy extends SpecStrategy {
  override handlesRequired = true;
  /**
   * The objects of updates in flight, with their previous state: kube's update rules differ
   * (a TZ= schedule the old object already had stays allowed, the time zone is checked only
   * when it changes, the name length only on create), and the store calls validate for both.
   */
  private olds = new WeakMap<object, any>();
  override prepareForCreate(obj: any, ctx: StrategyContext): void {
    defaultCronJob(obj, ctx.info);
    obj.status = {};
  }
  override prepareForUpdate(obj: any, old: any, ctx: StrategyContext): void {
    defaultCronJob(obj, ctx.info);
    this.olds.set(obj, old);
  }
  override validate(obj: any): FieldError[] {
    return validateCronJob(obj, this.olds.get(obj));
  }
}

export class ReplicationControllerStrategy extends SpecStrategy {
  override handlesRequired = true;
  /** v1 ReplicationControllers orphan their pods unless told otherwise, for compatibility (as kube). */
  override defaultGarbageCollectionPolicy(version: string): 'DeleteDependents' | 'OrphanDependents' {
    return version === 'v1' ? 'OrphanDependents' : 'DeleteDependents';
  }
  private defaults(obj: any, ctx: StrategyContext): void {
    const spec = child(obj, 'spec');
    if (!spec) return;
    const labels = spec.template?.metadata?.labels;
    if (isObj(labels)) {
      if (!isObj(spec.selector) || Object.keys(spec.selector).length === 0) spec.selector = { ...labels };
      if (!isObj(obj.metadata.labels) || Object.keys(obj.metadata.labels).length === 0) obj.metadata.labels = { ...labels };
    }
    def(spec, 'replicas', 1);
    defaultPodTemplate(spec.template, ctx.info);
  }
  override prepareForCreate(obj: any, ctx: StrategyContext): void {
    this.defaults(obj, ctx);
    obj.status = { replicas: 0 };
  }
  override prepareForUpdate(obj: any, _old: any, ctx: StrategyContext): void {
    this.defaults(obj, ctx);
  }
  override validate(obj: any): FieldError[] {
    return validateReplicationController(obj);
  }
  override validateUpdate(obj: any, old: any): FieldError[] {
    return validateReplicationControllerUpdate(obj, old);
  }
}

export class ConfigMapStrategy extends Strategy {
  override handlesRequired = true;
  override validate(obj: any): FieldError[] {
    return validateConfigMap(obj);
  }
  override validateUpdate(obj: any, old: any): FieldError[] {
    return validateConfigMapUpdate(obj, old);
  }
}

export class SecretStrategy extends Strategy {
  override handlesRequired = true;
  override prepareForCreate(obj: any, ctx: StrategyContext): void {
    defaultSecret(obj, ctx.info);
  }
  override prepareForUpdate(obj: any, _old: any, ctx: StrategyContext): void {
    defaultSecret(obj, ctx.info);
  }
  override validate(obj: any): FieldError[] {
    return validateSecret(obj);
  }
  override validateUpdate(obj: any, old: any): FieldError[] {
    return validateSecretUpdate(obj, old);
  }
}

export class PvcStrategy extends Strategy {
  override handlesRequired = true;
  override prepareForCreate(obj: any): void {
    defaultPvc(obj);
    obj.status = {};
    defaultPvcStatus(obj);
  }
  override prepareForUpdate(obj: any): void {
    defaultPvc(obj);
  }
  override validate(obj: any): FieldError[] {
    return validatePvc(obj);
  }
  override validateUpdate(obj: any, old: any): FieldError[] {
    return validatePvcUpdate(obj, old);
  }
}

export class PvStrategy extends Strategy {
  override handlesRequired = true;
  override prepareForCreate(obj: any): void {
    obj.status = {};
    defaultPv(obj);
  }
  override prepareForUpdate(obj: any): void {
    defaultPv(obj);
  }
  override validate(obj: any): FieldError[] {
    return validatePv(obj);
  }
  override validateUpdate(obj: any, old: any): FieldError[] {
    return validatePvUpdate(obj, old);
  }
}

export class LeaseStrategy extends Strategy {
  override handlesRequired = true;
  override allowCreateOnUpdate = true;
  override prepareForCreate(obj: any): void {
    if (obj.spec === undefined || obj.spec === null) obj.spec = {};
  }
  override validate(obj: any): FieldError[] {
    return validateLease(obj);
  }
}

export class EventStrategy extends Strategy {
  override handlesRequired = true;
  override allowCreateOnUpdate = true;
  constructor(private group: string) {
    super();
  }
  override validate(obj: any): FieldError[] {
    return validateEvent(obj, this.group);
  }
}

/** Kinds whose only special rule is a defaulter, run on every write as kube's decoder runs it. */
export class DefaultingStrategy extends Strategy {
  constructor(private readonly defaults: (obj: any) => void, tracksGeneration = false) {
    super();
    this.tracksGeneration = tracksGeneration;
  }
  override prepareForCreate(obj: any): void {
    this.defaults(obj);
  }
  override prepareForUpdate(obj: any): void {
    this.defaults(obj);
  }
}

export const endpointsStrategy = () => new DefaultingStrategy(defaultEndpoints);
export const endpointSliceStrategy = () => new DefaultingStrategy(defaultEndpointSlice);
/** NetworkPolicy: ports and policy types defaulted, then kube's ValidateNetworkPolicy. */
export class NetworkPolicyStrategy extends DefaultingStrategy {
  override handlesRequired = true;
  constructor() {
    // podSelector is a plain struct in kube: absent, it is the empty selector (and printed so).
    super((obj) => {
      if (isObj(obj.spec) && !isObj(obj.spec.podSelector)) obj.spec.podSelector = {};
      defaultNetworkPolicy(obj);
    }, true);
  }
  override validate(obj: any): FieldError[] {
    return validateNetworkPolicy(obj);
  }
}

export const networkPolicyStrategy = () => new NetworkPolicyStrategy();

/** A kind whose validation is kube's hand-written validator (which reports missing fields itself). */
class ValidatedStrategy extends SpecStrategy {
  override handlesRequired = true;
  constructor(
    private readonly check: (obj: any, old?: any) => FieldError[],
    private readonly checkUpdate: (obj: any, old: any) => FieldError[] = () => [],
    private readonly defaults: (obj: any) => void = () => {},
    tracksGeneration = true,
  ) {
    super();
    this.tracksGeneration = tracksGeneration;
  }
  private olds = new WeakMap<object, any>();
  override prepareForCreate(obj: any): void {
    this.defaults(obj);
  }
  override prepareForUpdate(obj: any, old: any): void {
    this.defaults(obj);
    this.olds.set(obj, old);
  }
  override validate(obj: any): FieldError[] {
    return this.check(obj, this.olds.get(obj));
  }
  override validateUpdate(obj: any, old: any): FieldError[] {
    return this.checkUpdate(obj, old);
  }
}

/** A kind with kube's hand-written validator (and optionally its defaulter), tracking generation. */
export const validatedStrategy = (check: (obj: any, old?: any) => FieldError[], checkUpdate?: (obj: any, old: any) => FieldError[], defaults?: (obj: any) => void) =>
  new ValidatedStrategy(check, checkUpdate, defaults);
export const podDisruptionBudgetStrategy = () => new ValidatedStrategy(validatePdb);
export const ingressStrategy = () => new ValidatedStrategy((obj, old) => (old ? validateIngress(obj) : validateIngressCreate(obj)));
export const ingressClassStrategy = () => new ValidatedStrategy(validateIngressClass, validateIngressClassUpdate, defaultIngressClass);
export const storageClassStrategy = () => new ValidatedStrategy(validateStorageClass, validateStorageClassUpdate, defaultStorageClass, false);
export const priorityClassStrategy = () => new ValidatedStrategy(validatePriorityClass, validatePriorityClassUpdate, defaultPriorityClass, false);
