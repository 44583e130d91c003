// DefaultStorageClass and DefaultIngressClass (kube's plugin/pkg/admission/storage/
// persistentvolume/storageclass/setdefault and plugin/pkg/admission/network/defaultingressclass):
// a new PersistentVolumeClaim that names no class (spec.storageClassName absent; an empty
// string is a choice) and has no beta class annotation gets the default StorageClass; a
// new Ingress without spec.ingressClassName and without the kubernetes.io/ingress.class
// annotation gets the default IngressClass. The default is the class annotated
// is-default-class=true; when several are, the newest wins (then the first name). No
// default: the object is left as it is.
import { AdmissionPlugin, isObj, type Attributes, type ObjectSource } from './plugin.js';

/** The default class among `classes` by any of the annotations, or undefined. */
export function pickDefault(classes: any[], annotations: string[]): any | undefined {
  const defaults = classes.filter((c) => {
    const ann = c?.metadata?.annotations;
    return isObj(ann) && annotations.some((k) => ann[k] === 'true');
  });
  defaults.sort((x, y) => {
    const tx = String(x.metadata.creationTimestamp ?? '');
    const ty = String(y.metadata.creationTimestamp ?? '');
    if (tx !== ty) return tx > ty ? -1 : 1;
    return String(x.metadata.name) < String(y.metadata.name) ? -1 : 1;
  });
  return defaults[0];
}

export class DefaultStorageClass extends AdmissionPlugin {
  readonly name = 'DefaultStorageClass';
  constructor(objects: ObjectSource) {
    super(objects);
  }

  handles(a: Attributes): boolean {
    return a.operation === 'CREATE' && a.subresource === '' && a.groupResource.group === '' && a.groupResource.resource === 'persistentvolumeclaims';
  }

  override admit(a: Attributes): void {
    const pvc = a.obj;
    if (!isObj(pvc.spec)) return;
    if (pvc.spec.storageClassName !== undefined && pvc.spec.storageClassName !== null) return;
    if (pvc.metadata.annotations?.['volume.beta.kubernetes.io/storage-class']) return;
    const def = pickDefault(this.objects.list('storageclasses.storage.k8s.io', ''), [
      'storageclass.kubernetes.io/is-default-class',
      'storageclass.beta.kubernetes.io/is-default-class',
    ]);
    if (def) pvc.spec.storageClassName = def.metadata.name;
  }
}

export class DefaultIngressClass extends AdmissionPlugin {
  readonly name = 'DefaultIngressClass';

  handles(a: Attributes): boolean {
    return a.operation === 'CREATE' && a.subresource === '' && a.groupResource.group === 'networking.k8s.io' && a.groupResource.resource === 'ingresses';
  }

  override admit(a: Attributes): void {
    const ing = a.obj;
    if (!isObj(ing.spec)) ing.spec = {};
    if (ing.spec.ingressClassName !== undefined && ing.spec.ingressClassName !== null) return;
    if (isObj(ing.metadata.annotations) && 'kubernetes.io/ingress.class' in ing.metadata.annotations) return;
    const def = pickDefault(this.objects.list('ingressclasses.networking.k8s.io', ''), ['ingressclass.kubernetes.io/is-default-class']);
    if (def) ing.spec.ingressClassName = def.metadata.name;
  }
}
