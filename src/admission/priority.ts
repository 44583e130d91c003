// Priority (kube 1.33's plugin/pkg/admission/priority): a new pod's priorityClassName
// resolves to its priority and preemptionPolicy (no class: the globalDefault class's, else
// 0 and PreemptLowerPriority); an unknown class, or a priority or preemptionPolicy the pod
// sets that differs from its class's, is refused. An update keeps what admission set at
// creation. A PriorityClass may be globalDefault only while no other one is.
//
// Thread ownership: the front thread; reads the priority classes' cache.
import { AdmissionPlugin, forbidden, isObj, type Attributes } from './plugin.js';

const GR = 'priorityclasses.scheduling.k8s.io';

export class PriorityAdmission extends AdmissionPlugin {
  readonly name = 'Priority';

  handles(a: Attributes): boolean {
    if (a.subresource !== '' || a.operation === 'CONNECT') return false;
    const gr = a.groupResource;
    return (gr.group === '' && gr.resource === 'pods') || (gr.group === 'scheduling.k8s.io' && gr.resource === 'priorityclasses');
  }

  /** The globalDefault class; of several (a race), the one of lowest value, as kube picks. */
  private defaultClass(): any | undefined {
    let best: any;
    for (const pc of this.objects.list(GR, '')) {
      if (pc?.globalDefault === true && (best === undefined || (best.value ?? 0) > (pc.value ?? 0))) best = pc;
    }
    return best;
  }

  override admit(a: Attributes): void {
    if (a.groupResource.resource !== 'pods') return;
    const spec = a.obj?.spec;
    if (!isObj(spec)) return;
    if (a.operation === 'UPDATE') {
      // what admission set at creation stays (validation refuses any other change to them)
      const old = a.old?.spec;
      if (spec.priority === undefined && old?.priority !== undefined) spec.priority = old.priority;
      if (spec.preemptionPolicy === undefined && old?.preemptionPolicy !== undefined) spec.preemptionPolicy = old.preemptionPolicy;
      return;
    }
    if (a.operation !== 'CREATE') return;
    let priority: number;
    let policy: string | undefined;
    if (!spec.priorityClassName) {
      const dpc = this.defaultClass();
      if (dpc) {
        spec.priorityClassName = dpc.metadata.name;
        priority = dpc.value ?? 0;
        policy = dpc.preemptionPolicy;
      } else {
        priority = 0;
        policy = 'PreemptLowerPriority';
      }
    } else {
      const pc = this.objects.get(GR, '', String(spec.priorityClassName));
      if (!pc) throw forbidden(a, `no PriorityClass with name ${spec.priorityClassName} was found`);
      priority = pc.value ?? 0;
      policy = pc.preemptionPolicy;
    }
    if (spec.priority !== undefined && spec.priority !== null && spec.priority !== priority) {
      throw forbidden(a, `the integer value of priority (${spec.priority}) must not be provided in pod spec; priority admission controller computed ${priority} from the given PriorityClass name`);
    }
    spec.priority = priority;
    if (policy !== undefined && policy !== null) {
      if (spec.preemptionPolicy !== undefined && spec.preemptionPolicy !== null && spec.preemptionPolicy !== policy) {
        throw forbidden(a, `the string value of PreemptionPolicy (${spec.preemptionPolicy}) must not be provided in pod spec; priority admission controller computed ${policy} from the given PriorityClass name`);
      }
      spec.preemptionPolicy = policy;
    }
  }

  override validate(a: Attributes): void {
    if (a.groupResource.resource !== 'priorityclasses') return;
    if (a.operation !== 'CREATE' && a.operation !== 'UPDATE') return;
    const pc = a.obj;
    if (pc?.globalDefault !== true) return;
    const dpc = this.defaultClass();
    if (dpc && (a.operation === 'CREATE' || dpc.metadata.name !== pc.metadata?.name)) {
      throw forbidden(a, `PriorityClass ${dpc.metadata.name} is already marked as default. Only one default can exist`);
    }
  }
}
