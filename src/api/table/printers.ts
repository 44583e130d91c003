// Which printer serves which resource. Kinds without their own column set get the default
// Table: Name and Created At (spec 2.5).
import { col, nameCol, type KindPrinter } from './types.js';
import { str } from './format.js';
import { podPrinter } from './pod.js';
import { configMapPrinter, endpointsPrinter, eventPrinter, leasePrinter, namespacePrinter, nodePrinter, secretPrinter, serviceAccountPrinter, servicePrinter } from './core.js';
import * as more from './more.js';
import * as cluster from './cluster.js';
import { cronJobPrinter, daemonSetPrinter, deploymentPrinter, jobPrinter, replicaSetPrinter, statefulSetPrinter } from './apps.js';

/** RFC 3339 in UTC with whole seconds, Go's zero time for a missing timestamp. */
export function createdAt(ts: unknown): string {
  const t = typeof ts === 'string' ? Date.parse(ts) : NaN;
  if (Number.isNaN(t)) return '0001-01-01T00:00:00Z';
  return new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export const defaultPrinter: KindPrinter = {
  columns: [nameCol(), col('Created At', 'date', 'When the object was created (UTC).')],
  row: (o) => ({ cells: [str(o?.metadata?.name), createdAt(o?.metadata?.creationTimestamp)] }),
  isDefault: true,
};

/** Keyed by "group/resource" ("" group for core). */
const PRINTERS = new Map<string, KindPrinter>([
  ['/pods', podPrinter],
  ['/nodes', nodePrinter],
  ['/namespaces', namespacePrinter],
  ['/services', servicePrinter],
  ['/endpoints', endpointsPrinter],
  ['/configmaps', configMapPrinter],
  ['/secrets', secretPrinter],
  ['/serviceaccounts', serviceAccountPrinter],
  ['/events', eventPrinter],
  ['events.k8s.io/events', eventPrinter],
  ['coordination.k8s.io/leases', leasePrinter],
  ['apps/deployments', deploymentPrinter],
  ['apps/replicasets', replicaSetPrinter],
  ['apps/statefulsets', statefulSetPrinter],
  ['apps/daemonsets', daemonSetPrinter],
  ['batch/jobs', jobPrinter],
  ['batch/cronjobs', cronJobPrinter],
  ['/replicationcontrollers', more.replicationControllerPrinter],
  ['/podtemplates', more.podTemplatePrinter],
  ['/persistentvolumes', more.persistentVolumePrinter],
  ['/persistentvolumeclaims', more.persistentVolumeClaimPrinter],
  ['policy/poddisruptionbudgets', more.podDisruptionBudgetPrinter],
  ['networking.k8s.io/ingresses', more.ingressPrinter],
  ['networking.k8s.io/ingressclasses', more.ingressClassPrinter],
  ['networking.k8s.io/networkpolicies', more.networkPolicyPrinter],
  ['storage.k8s.io/storageclasses', more.storageClassPrinter],
  ['rbac.authorization.k8s.io/rolebindings', more.roleBindingPrinter],
  ['rbac.authorization.k8s.io/clusterrolebindings', more.clusterRoleBindingPrinter],
  ['apps/controllerrevisions', more.controllerRevisionPrinter],
  ['scheduling.k8s.io/priorityclasses', more.priorityClassPrinter],
  ['node.k8s.io/runtimeclasses', more.runtimeClassPrinter],
  ['discovery.k8s.io/endpointslices', more.endpointSlicePrinter],
  ['admissionregistration.k8s.io/mutatingwebhookconfigurations', more.mutatingWebhookPrinter],
  ['admissionregistration.k8s.io/validatingwebhookconfigurations', more.validatingWebhookPrinter],
  ['certificates.k8s.io/certificatesigningrequests', more.certificateSigningRequestPrinter],
  ['autoscaling/horizontalpodautoscalers', cluster.horizontalPodAutoscalerPrinter],
  ['/resourcequotas', cluster.resourceQuotaPrinter],
  ['/limitranges', cluster.limitRangePrinter],
  ['/componentstatuses', cluster.componentStatusPrinter],
  ['apiregistration.k8s.io/apiservices', cluster.apiServicePrinter],
  ['storage.k8s.io/csidrivers', cluster.csiDriverPrinter],
  ['storage.k8s.io/csinodes', cluster.csiNodePrinter],
  ['storage.k8s.io/volumeattachments', cluster.volumeAttachmentPrinter],
  ['storage.k8s.io/csistoragecapacities', cluster.csiStorageCapacityPrinter],
  ['flowcontrol.apiserver.k8s.io/flowschemas', cluster.flowSchemaPrinter],
  ['flowcontrol.apiserver.k8s.io/prioritylevelconfigurations', cluster.priorityLevelConfigurationPrinter],
  ['admissionregistration.k8s.io/validatingadmissionpolicies', cluster.validatingAdmissionPolicyPrinter],
  ['admissionregistration.k8s.io/validatingadmissionpolicybindings', cluster.validatingAdmissionPolicyBindingPrinter],
  ['admissionregistration.k8s.io/mutatingadmissionpolicies', cluster.mutatingAdmissionPolicyPrinter],
  ['admissionregistration.k8s.io/mutatingadmissionpolicybindings', cluster.validatingAdmissionPolicyBindingPrinter],
  ['networking.k8s.io/ipaddresses', cluster.ipAddressPrinter],
  ['networking.k8s.io/servicecidrs', cluster.serviceCIDRPrinter],
]);

export function printerFor(group: string, resource: string): KindPrinter {
  return PRINTERS.get(`${group}/${resource}`) ?? defaultPrinter;
}
