// NodeRestriction (kube's plugin/pkg/admission/noderestriction, 1.33): what a node user
// (system:node:<name> in system:nodes) may write, beyond what the Node authorizer lets
// through broadly: only its own Node (no taint or configSource changes, and only the labels
// kube lets kubelets set), only mirror pods bound to itself and referencing no other
// objects, only the status of pods bound to it (labels untouched), evictions and deletions
// of its own pods, its own Lease and CSINode, and tokens bound to its own pods. Other
// users pass untouched. Default off, as in kube (--enable-admission-plugins names it).
//
// Thread ownership: the front thread; stateless (reads pods and nodes from the caches).
import { AdmissionPlugin, forbidden, isObj, type Attributes } from './plugin.js';
import { nodeIdentity } from '../auth/node/node-authorizer.js';
import { podReferences } from '../auth/node/pod-references.js';
import { errors } from '../errors.js';

const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';
const NODE_LEASE_NAMESPACE = 'kube-node-lease';
const NODE_RESTRICTION_NS = 'node-restriction.kubernetes.io';

/** kube's kubelet labels (k8s.io/kubelet/pkg/apis IsKubeletLabel): the labels a kubelet may set of the kubernetes.io and k8s.io namespaces. */
const KUBELET_LABELS = new Set([
  'kubernetes.io/hostname',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'beta.kubernetes.io/instance-type',
  'node.kubernetes.io/instance-type',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
]);
const KUBELET_LABEL_NAMESPACES = ['kubelet.kubernetes.io', 'node.kubernetes.io'];

const labelNamespace = (k: string) => (k.includes('/') ? k.slice(0, k.indexOf('/')) : '');
const inNamespace = (ns: string, base: string) => ns === base || ns.endsWith(`.${base}`);

export function isKubeletLabel(key: string): boolean {
  if (KUBELET_LABELS.has(key)) return true;
  const ns = labelNamespace(key);
  return KUBELET_LABEL_NAMESPACES.some((b) => inNamespace(ns, b));
}

/** kube's getForbiddenLabels: node-restriction labels, and kubernetes.io/k8s.io labels that are not kubelet labels; sorted. */
export function forbiddenLabels(modified: Iterable<string>): string[] {
  const out = new Set<string>();
  for (const k of modified) {
    const ns = labelNamespace(k);
    if (inNamespace(ns, NODE_RESTRICTION_NS)) out.add(k);
    if ((inNamespace(ns, 'kubernetes.io') || inNamespace(ns, 'k8s.io')) && !isKubeletLabel(k)) out.add(k);
  }
  return [...out].sort();
}

/** kube's getModifiedLabels: keys added or changed in a, and keys of b gone from a. */
function modifiedLabels(a: Record<string, string> | undefined, b: Record<string, string> | undefined): Set<string> {
  const out = new Set<string>();
  const x = a ?? {};
  const y = b ?? {};
  for (const k of Object.keys(x)) if (!(k in y) || y[k] !== x[k]) out.add(k);
  for (const k of Object.keys(y)) if (!(k in x)) out.add(k);
  return out;
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

export class NodeRestriction extends AdmissionPlugin {
  readonly name = 'NodeRestriction';

  handles(a: Attributes): boolean {
    return a.user !== undefined && nodeIdentity(a.user) !== null;
  }

  override admit(a: Attributes): void {
    const node = nodeIdentity(a.user!);
    if (node === null) return;
    if (node === '') throw forbidden(a, `could not determine node from user "${a.user!.name}"`);
    const { group, resource } = a.groupResource;
    switch (`${resource}.${group}`) {
      case 'pods.':
        if (a.subresource === '') return this.pod(node, a);
        if (a.subresource === 'status') return this.podStatus(node, a);
        if (a.subresource === 'eviction') return this.podEviction(node, a);
        throw forbidden(a, `unexpected pod subresource "${a.subresource}", only 'status' and 'eviction' are allowed`);
      case 'nodes.':
        return this.node(node, a);
      case 'persistentvolumeclaims.':
        if (a.subresource !== 'status') throw forbidden(a, 'may only update PVC status');
        if (a.operation !== 'UPDATE') throw forbidden(a, `unexpected operation ${a.operation}`);
        return;
      case 'serviceaccounts.':
        return this.serviceAccount(node, a);
      case 'leases.coordination.k8s.io':
        if (a.namespace !== NODE_LEASE_NAMESPACE) throw forbidden(a, `can only access leases in the "${NODE_LEASE_NAMESPACE}" system namespace`);
        if ((a.operation === 'CREATE' ? a.obj?.metadata?.name : a.name) !== node) throw forbidden(a, 'can only access node lease with the same name as the requesting node');
        return;
      case 'csinodes.storage.k8s.io':
        if ((a.operation === 'CREATE' ? a.obj?.metadata?.name : a.name) !== node) throw forbidden(a, 'can only access CSINode with the same name as the requesting node');
        return;
      case 'resourceslices.resource.k8s.io':
        if (a.operation === 'CREATE' || a.operation === 'UPDATE') {
          if (a.obj?.spec?.nodeName !== node) throw forbidden(a, `node "${node}" can only create or update ResourceSlices with nodeName set to itself`);
        }
        return;
    }
  }

  private pod(node: string, a: Attributes): void {
    if (a.operation === 'DELETE') {
      const cur = this.objects.get('pods', a.namespace, a.name);
      if (!cur) throw errors.notFound({ group: '', resource: 'pods' }, a.name);
      if (cur.spec?.nodeName !== node) throw forbidden(a, `node "${node}" can only delete pods with spec.nodeName set to itself`);
      return;
    }
    if (a.operation !== 'CREATE') throw forbidden(a, `unexpected operation "${a.operation}", node "${node}" can only create and delete mirror pods`);
    const pod = a.obj ?? {};
    const ann = pod.metadata?.annotations;
    if (!isObj(ann) || !(MIRROR_POD_ANNOTATION in ann)) throw forbidden(a, `pod does not have "${MIRROR_POD_ANNOTATION}" annotation, node "${node}" can only create mirror pods`);
    if (pod.spec?.nodeName !== node) throw forbidden(a, `node "${node}" can only create pods with spec.nodeName set to itself`);
    const owners: any[] = Array.isArray(pod.metadata?.ownerReferences) ? pod.metadata.ownerReferences : [];
    if (owners.length > 1) throw forbidden(a, `node "${node}" can only create pods with a single owner reference set to itself`);
    if (owners.length === 0) throw forbidden(a, `node "${node}" can only create pods with an owner reference set to itself`);
    const o = owners[0];
    if (o.apiVersion !== 'v1' || o.kind !== 'Node' || o.name !== node) throw forbidden(a, `node "${node}" can only create pods with an owner reference set to itself`);
    if (o.controller !== true) throw forbidden(a, `node "${node}" can only create pods with a controller owner reference set to itself`);
    if (o.blockOwnerDeletion === true) throw forbidden(a, `node "${node}" must not set blockOwnerDeletion on an owner reference`);
    const n = this.objects.get('nodes', '', node);
    if (!n) throw errors.notFound({ group: '', resource: 'nodes' }, node);
    if (o.uid !== n.metadata?.uid) throw forbidden(a, `node ${node} UID mismatch: expected ${n.metadata?.uid} got ${o.uid}`);
    const refs = podReferences(pod);
    if (pod.spec?.serviceAccountName) throw forbidden(a, `node "${node}" can not create pods that reference a service account`);
    if (refs.secrets.size) throw forbidden(a, `node "${node}" can not create pods that reference secrets`);
    if (refs.configMaps.size) throw forbidden(a, `node "${node}" can not create pods that reference configmaps`);
    if ((pod.spec?.volumes ?? []).some((v: any) => v?.persistentVolumeClaim)) throw forbidden(a, `node "${node}" can not create pods that reference persistentvolumeclaims`);
    if ((pod.spec?.resourceClaims ?? []).length) throw forbidden(a, `node "${node}" can not create pods that reference resourceclaims`);
  }

  private podStatus(node: string, a: Attributes): void {
    if (a.operation !== 'UPDATE') throw forbidden(a, `unexpected operation ${a.operation}`);
    if (a.old?.spec?.nodeName !== node) throw forbidden(a, `node "${node}" can only update pod status for pods with spec.nodeName set to itself`);
    if (!sameJson(a.old?.metadata?.labels ?? {}, a.obj?.metadata?.labels ?? {})) throw forbidden(a, `node "${node}" cannot update labels through pod status`);
    if (!sameJson(a.old?.status?.resourceClaimStatuses, a.obj?.status?.resourceClaimStatuses)) throw forbidden(a, `node "${node}" cannot update resource claim statues`);
  }

  private podEviction(node: string, a: Attributes): void {
    if (a.operation !== 'CREATE') throw forbidden(a, `unexpected operation ${a.operation}`);
    const name = a.name || a.obj?.metadata?.name;
    const pod = this.objects.get('pods', a.namespace, name);
    if (!pod) throw errors.notFound({ group: '', resource: 'pods' }, name);
    if (pod.spec?.nodeName !== node) throw forbidden(a, `node ${node} can only evict pods with spec.nodeName set to itself`);
  }

  private node(node: string, a: Attributes): void {
    const requested = a.name || a.obj?.metadata?.name || '';
    if (requested !== node) throw forbidden(a, `node "${node}" is not allowed to modify node "${requested}"`);
    if (a.operation === 'CREATE') {
      if (a.obj?.spec?.configSource) throw forbidden(a, `node "${node}" is not allowed to create pods with a non-nil configSource`);
      const bad = forbiddenLabels(modifiedLabels(a.obj?.metadata?.labels, undefined));
      if (bad.length) throw forbidden(a, `node "${node}" is not allowed to set the following labels: ${bad.join(', ')}`);
    } else if (a.operation === 'UPDATE') {
      if (a.obj?.spec?.configSource && !sameJson(a.obj.spec.configSource, a.old?.spec?.configSource)) throw forbidden(a, `node "${node}" is not allowed to update configSource to a new non-nil configSource`);
      if (!sameJson(a.obj?.spec?.taints, a.old?.spec?.taints)) throw forbidden(a, `node "${node}" is not allowed to modify taints`);
      const bad = forbiddenLabels(modifiedLabels(a.obj?.metadata?.labels, a.old?.metadata?.labels));
      if (bad.length) throw forbidden(a, `node "${node}" is not allowed to modify labels: ${bad.join(', ')}`);
    }
  }

  /** Tokens a node asks for must be bound to a pod of its own (kube's admitServiceAccount). */
  private serviceAccount(node: string, a: Attributes): void {
    if (a.operation !== 'CREATE' || a.subresource !== 'token') return;
    const ref = a.obj?.spec?.boundObjectRef;
    if (!ref) throw forbidden(a, 'node requested token not bound to a pod');
    if (ref.kind !== 'Pod') throw forbidden(a, `node requested token bound to a ${ref.kind}`);
    const pod = this.objects.get('pods', a.namespace, ref.name);
    if (!pod) throw forbidden(a, `node requested token bound to a pod that does not exist`);
    if (ref.uid && ref.uid !== pod.metadata?.uid) throw forbidden(a, `the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`);
    if (pod.spec?.nodeName !== node) throw forbidden(a, 'node requested token bound to a pod scheduled on a different node');
  }
}
