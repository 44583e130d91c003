// DefaultTolerationSeconds (kube's plugin/pkg/admission/defaulttolerationseconds): a pod
// (created or updated) that does not tolerate the not-ready and unreachable NoExecute taints gets tolerations of
// them for --default-not-ready-toleration-seconds and --default-unreachable-toleration-seconds.
//
// Thread ownership: the front thread; no state beyond its two settings.
import { AdmissionPlugin, isObj, type Attributes, type ObjectSource } from './plugin.js';

export interface TolerationSeconds {
  defaultNotReadyTolerationSeconds: number;
  defaultUnreachableTolerationSeconds: number;
}

const NOT_READY = 'node.kubernetes.io/not-ready';
const UNREACHABLE = 'node.kubernetes.io/unreachable';

export class DefaultTolerationSeconds extends AdmissionPlugin {
  readonly name = 'DefaultTolerationSeconds';

  constructor(
    objects: ObjectSource,
    private readonly seconds: TolerationSeconds,
  ) {
    super(objects);
  }

  handles(a: Attributes): boolean {
    // updates too, as kube: a pod written back without them gets them again
    return (a.operation === 'CREATE' || a.operation === 'UPDATE') && a.subresource === '' && a.groupResource.resource === 'pods' && a.groupResource.group === '';
  }

  override admit(a: Attributes): void {
    const spec = a.obj?.spec;
    if (!isObj(spec)) return;
    const tols = Array.isArray(spec.tolerations) ? spec.tolerations : [];
    // a toleration of the key (or of every key) for NoExecute (or every effect) covers it
    const tolerates = (key: string) => tols.some((t: any) => isObj(t) && (t.key === key || !t.key) && (t.effect === 'NoExecute' || !t.effect));
    const add: any[] = [];
    if (!tolerates(NOT_READY)) add.push({ key: NOT_READY, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: this.seconds.defaultNotReadyTolerationSeconds });
    if (!tolerates(UNREACHABLE)) add.push({ key: UNREACHABLE, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: this.seconds.defaultUnreachableTolerationSeconds });
    if (add.length) spec.tolerations = [...tols, ...add];
  }
}
