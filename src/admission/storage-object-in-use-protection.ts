// StorageObjectInUseProtection (kube's plugin/pkg/admission/storage/storageobjectinuseprotection):
// every new PersistentVolumeClaim gets the kubernetes.io/pvc-protection finalizer and every
// new PersistentVolume kubernetes.io/pv-protection, so that deleting one in use only marks
// it. src/controllers/storage-protection.ts removes them once nothing uses the object.
import { AdmissionPlugin, arr, type Attributes } from './plugin.js';

export const PVC_PROTECTION_FINALIZER = 'kubernetes.io/pvc-protection';
export const PV_PROTECTION_FINALIZER = 'kubernetes.io/pv-protection';

export class StorageObjectInUseProtection extends AdmissionPlugin {
  readonly name = 'StorageObjectInUseProtection';

  handles(a: Attributes): boolean {
    const gr = a.groupResource;
    return a.operation === 'CREATE' && a.subresource === '' && gr.group === '' && (gr.resource === 'persistentvolumeclaims' || gr.resource === 'persistentvolumes');
  }

  override admit(a: Attributes): void {
    const f = a.groupResource.resource === 'persistentvolumes' ? PV_PROTECTION_FINALIZER : PVC_PROTECTION_FINALIZER;
    const m = a.obj.metadata;
    const have = arr(m.finalizers);
    if (!have.includes(f)) m.finalizers = [...have, f];
  }
}
