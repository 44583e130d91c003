#!/usr/bin/env node
// Compiles the protobuf descriptors of Kubernetes 1.33 (../shared/k8s-api-1.33/proto-descriptors)
// into src/codec/proto-schema.ts: message names, field names, numbers and types only
// (protobufjs's JSON form, without comments), plus the map from group/version/kind to the
// message that encodes it. The server loads this at start; it reads nothing outside the repo.
//
//   node scripts/gen-proto-schema.mjs [path-to-k8s-api-1.33]
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const pb = require('protobufjs');
require('protobufjs/ext/descriptor');

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = resolve(process.argv[2] ?? process.env.KUBESHARD_API_DATA ?? join(root, '..', 'shared', 'k8s-api-1.33'));
const pbRoot = pb.Root.fromDescriptor(readFileSync(join(dataDir, 'proto-descriptors', 'k8s-1.33.protoset')));
const json = pbRoot.toJSON();

// Strip everything that is not a name, a number or a type. The edition stays: the messages
// are proto2, whose explicit field presence makes protobufjs write a set zero (replicas: 0),
// which Go's pointer fields need; without it protobufjs assumes proto3 and drops zeros.
function prune(node) {
  if (node === null || typeof node !== 'object') return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === 'comment' || k === 'options') continue;
    out[k] = typeof v === 'object' ? prune(v) : v;
  }
  return out;
}
const schema = prune(json);

// group/version/kind -> full message name, for every kind of the catalog and the meta kinds.
const PKG_OF_GROUP = { '': 'core', 'rbac.authorization.k8s.io': 'rbac', 'flowcontrol.apiserver.k8s.io': 'flowcontrol', 'internal.apiserver.k8s.io': 'apiserverinternal' };
const messages = [];
(function walk(ns, prefix) {
  for (const [name, v] of Object.entries(ns.nested ?? {})) {
    const full = prefix ? `${prefix}.${name}` : name;
    if (v.fields) messages.push(full);
    walk(v, full);
  }
})(json, '');
const discovery = JSON.parse(readFileSync(join(dataDir, 'discovery', 'derived-discovery-1.33.json'), 'utf8'));
const kinds = {};
function find(group, version, kind) {
  const pkgName = PKG_OF_GROUP[group] ?? group.split('.')[0];
  const cands = messages.filter((m) => m.endsWith(`.${version}.${kind}`));
  return cands.find((m) => m.split('.').slice(-3, -2)[0] === pkgName) ?? (cands.length === 1 ? cands[0] : undefined);
}
for (const gv of discovery.groupVersions) {
  const [group, version] = gv.groupVersion.includes('/') ? gv.groupVersion.split('/') : ['', gv.groupVersion];
  for (const r of gv.resources) {
    const g = r.group ?? group;
    const v = r.version ?? version;
    for (const k of [r.kind, r.name.includes('/') ? null : r.kind + 'List']) {
      if (!k) continue;
      const m = find(g, v, k);
      if (m) kinds[`${g ? g + '/' : ''}${v}/${k}`] = m;
    }
  }
}
for (const k of ['DeleteOptions', 'Status', 'WatchEvent', 'ListOptions', 'Table', 'PartialObjectMetadata', 'PartialObjectMetadataList']) {
  const m = messages.find((x) => x === `k8s.io.apimachinery.pkg.apis.meta.v1.${k}`);
  if (m) {
    kinds[`meta.k8s.io/v1/${k}`] = m;
    kinds[`v1/${k}`] ??= m;
  }
}

// Proto field names are not always the JSON names (Go's go-to-protobuf lower-cases only the
// first letter: aPIGroup, uID, Webhooks, xKubernetesListType), and a Go struct embedded
// with `json:",inline"` is one message field on the wire (Probe.handler, Volume.volumeSource,
// ConfigMapKeySelector.localObjectReference) whose own fields sit in the parent's JSON.
// Both facts come from comparing each message with its OpenAPI definition: protoJsonNames
// maps the differing field names, protoInline lists the inline fields.
const swagger = JSON.parse(readFileSync(join(dataDir, 'openapi-v2', 'swagger.json'), 'utf8'));
const defOf = (m) => 'io.' + m.replace(/^k8s\.io\./, 'k8s.').replace('apiextensions_apiserver', 'apiextensions-apiserver').replace('kube_aggregator', 'kube-aggregator');
const norm = (n) => n.replace(/[^A-Za-z0-9]/g, '').toLowerCase();
const msgNode = (full) => full.split('.').reduce((n, part) => n?.nested?.[part], schema);
const inline = {};
const renamed = new Map(); // message -> Map(protoName -> jsonName), checked for consistency
const unresolved = [];
/** A message all of whose fields (or, for its own inline structs, theirs) are JSON properties of the parent. */
function fitsInline(full, byNorm, depth = 0) {
  const fields = msgNode(full)?.fields;
  if (!fields || depth > 3) return false;
  return Object.entries(fields).every(([x, f]) => byNorm.has(norm(x)) || (f.type.startsWith('.') && fitsInline(f.type.slice(1), byNorm, depth + 1)));
}
function resolveAgainst(full, props, owner) {
  const node = msgNode(full);
  const byNorm = new Map(Object.keys(props).map((p) => [norm(p), p]));
  for (const [name, f] of Object.entries(node.fields)) {
    if (name in props) continue;
    const json = byNorm.get(norm(name));
    if (json) {
      const m = renamed.get(full) ?? new Map();
      if (m.has(name) && m.get(name) !== json) throw new Error(`${full}.${name}: JSON name ${m.get(name)} vs ${json}`);
      renamed.set(full, m.set(name, json));
      continue;
    }
    const sub = f.type.startsWith('.') ? f.type.slice(1) : undefined;
    if (sub && fitsInline(sub, byNorm)) {
      (inline[full] ??= []).includes(name) || inline[full].push(name);
      resolveAgainst(sub, props, owner);
      continue;
    }
    unresolved.push(`${owner}: ${full}.${name}`);
  }
}
for (const full of messages) {
  const props = swagger.definitions[defOf(full)]?.properties;
  // Definitions without properties are the special wire types (Time, Quantity, IntOrString,
  // RawExtension, JSONSchemaPropsOr*, ...), which the codec converts by message name.
  if (props) resolveAgainst(full, props, defOf(full));
}
const jsonNames = Object.fromEntries([...renamed].map(([full, m]) => [full, Object.fromEntries(m)]));
if (unresolved.length) console.warn(`fields with no JSON counterpart (left as they are):\n  ${unresolved.join('\n  ')}`);

// Which zero scalars the JSON form keeps. Go's protobuf encoder writes every non-pointer
// field, zero or not, so a zero on the wire says nothing; Go's JSON encoder writes a zero
// only for a field without omitempty or a pointer that is set. The facts:
//   - required in OpenAPI: no omitempty, always written (ReplicaSetStatus.replicas);
//   - a `default` in the OpenAPI v3 definition: kube-openapi gives every non-pointer field
//     without omitempty its zero value as default (ContainerPort.containerPort: 0), and a
//     field with a declared default is either such a field or a pointer: written either way;
//   - a pointer: neither the protos nor OpenAPI say which optional fields are Go pointers, so
//     POINTER_SCALARS below lists them (by group and type, every served version), checked
//     against the 1.33 Go types. Every other optional scalar is non-pointer with omitempty
//     and its zero is dropped (ServiceSpec.publishNotReadyAddresses, DeploymentStatus.replicas).
// Only GA types are listed; a beta type whose pointer is missing here loses an explicit zero.
const POINTER_SCALARS = {
  'authentication.TokenRequestSpec': ['expirationSeconds'],
  'core.AzureDiskVolumeSource': ['cachingMode', 'fsType', 'readOnly', 'kind'],
  'core.ClientIPConfig': ['timeoutSeconds'],
  'core.ClusterTrustBundleProjection': ['name', 'signerName', 'optional'],
  'core.ConfigMap': ['immutable'],
  'core.Secret': ['immutable'],
  'core.ConfigMapEnvSource': ['optional'],
  'core.ConfigMapKeySelector': ['optional'],
  'core.ConfigMapProjection': ['optional'],
  'core.ConfigMapVolumeSource': ['defaultMode', 'optional'],
  'core.SecretEnvSource': ['optional'],
  'core.SecretKeySelector': ['optional'],
  'core.SecretProjection': ['optional'],
  'core.SecretVolumeSource': ['defaultMode', 'optional'],
  'core.CSIVolumeSource': ['readOnly', 'fsType'],
  'core.Container': ['restartPolicy'],
  'core.EphemeralContainer': ['restartPolicy'],
  'core.ContainerStatus': ['started', 'stopSignal'],
  'core.Lifecycle': ['stopSignal'],
  'core.DownwardAPIVolumeFile': ['mode'],
  'core.DownwardAPIVolumeSource': ['defaultMode'],
  'core.KeyToPath': ['mode'],
  'core.ProjectedVolumeSource': ['defaultMode'],
  'core.FCVolumeSource': ['lun'],
  'core.GRPCAction': ['service'],
  'core.NodeFeatures': ['supplementalGroupsPolicy'],
  'core.NodeRuntimeHandlerFeatures': ['recursiveReadOnlyMounts', 'userNamespaces'],
  'core.NodeSwapStatus': ['capacity'],
  'core.PersistentVolumeClaimSpec': ['storageClassName', 'volumeMode', 'volumeAttributesClassName'],
  'core.PersistentVolumeClaimStatus': ['currentVolumeAttributesClassName'],
  'core.PersistentVolumeSpec': ['volumeMode', 'volumeAttributesClassName'],
  'core.PodDNSConfigOption': ['value'],
  'core.PodResourceClaim': ['resourceClaimName', 'resourceClaimTemplateName'],
  'core.PodSecurityContext': ['fsGroup', 'runAsGroup', 'runAsNonRoot', 'runAsUser', 'fsGroupChangePolicy', 'supplementalGroupsPolicy', 'seLinuxChangePolicy'],
  'core.PodSpec': ['activeDeadlineSeconds', 'automountServiceAccountToken', 'enableServiceLinks', 'hostUsers', 'priority', 'setHostnameAsFQDN', 'shareProcessNamespace', 'terminationGracePeriodSeconds', 'runtimeClassName', 'preemptionPolicy'],
  'core.Probe': ['terminationGracePeriodSeconds'],
  'core.SecurityContext': ['allowPrivilegeEscalation', 'privileged', 'readOnlyRootFilesystem', 'runAsGroup', 'runAsNonRoot', 'runAsUser', 'procMount'],
  'core.SeccompProfile': ['localhostProfile'],
  'core.AppArmorProfile': ['localhostProfile'],
  'core.ServiceAccount': ['automountServiceAccountToken'],
  'core.ServiceAccountTokenProjection': ['expirationSeconds'],
  'core.ServicePort': ['appProtocol'],
  'core.EndpointPort': ['appProtocol'],
  'core.ServiceSpec': ['allocateLoadBalancerNodePorts', 'ipFamilyPolicy', 'loadBalancerClass', 'internalTrafficPolicy', 'trafficDistribution'],
  'core.Toleration': ['tolerationSeconds'],
  'core.TopologySpreadConstraint': ['minDomains', 'nodeAffinityPolicy', 'nodeTaintsPolicy'],
  'core.TypedLocalObjectReference': ['apiGroup'],
  'core.TypedObjectReference': ['apiGroup', 'namespace'],
  'core.VolumeMount': ['mountPropagation', 'recursiveReadOnly'],
  'core.VolumeMountStatus': ['recursiveReadOnly'],
  'core.WindowsSecurityContextOptions': ['hostProcess', 'gmsaCredentialSpecName', 'gmsaCredentialSpec', 'runAsUserName'],
  'meta.DeleteOptions': ['gracePeriodSeconds', 'ignoreStoreReadErrorWithClusterBreakingPotential', 'orphanDependents', 'propagationPolicy'],
  'meta.ListMeta': ['remainingItemCount'],
  'meta.ObjectMeta': ['deletionGracePeriodSeconds'],
  'meta.OwnerReference': ['blockOwnerDeletion', 'controller'],
  'admissionregistration.MutatingWebhook': ['timeoutSeconds', 'failurePolicy', 'matchPolicy', 'sideEffects', 'reinvocationPolicy'],
  'admissionregistration.ValidatingWebhook': ['timeoutSeconds', 'failurePolicy', 'matchPolicy', 'sideEffects'],
  'admissionregistration.RuleWithOperations': ['scope'],
  'admissionregistration.ServiceReference': ['port', 'path'],
  'admissionregistration.WebhookClientConfig': ['url'],
  'admissionregistration.ValidatingAdmissionPolicySpec': ['failurePolicy'],
  'admissionregistration.MatchResources': ['matchPolicy'],
  'admissionregistration.ParamRef': ['parameterNotFoundAction'],
  'admissionregistration.Validation': ['reason'],
  'apiextensions.ServiceReference': ['port', 'path'],
  'apiextensions.WebhookClientConfig': ['url'],
  'apiextensions.JSONSchemaProps': ['maxItems', 'maxLength', 'maxProperties', 'maximum', 'minItems', 'minLength', 'minProperties', 'minimum', 'multipleOf', 'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-list-type', 'x-kubernetes-map-type'],
  'apiextensions.ValidationRule': ['optionalOldSelf', 'reason'],
  'apiregistration.ServiceReference': ['port'],
  'apps.DaemonSetSpec': ['revisionHistoryLimit'],
  'apps.DaemonSetStatus': ['collisionCount'],
  'apps.DeploymentSpec': ['progressDeadlineSeconds', 'replicas', 'revisionHistoryLimit'],
  'apps.DeploymentStatus': ['collisionCount', 'terminatingReplicas'],
  'apps.ReplicaSetSpec': ['replicas'],
  'apps.ReplicaSetStatus': ['terminatingReplicas'],
  'apps.RollingUpdateStatefulSetStrategy': ['partition'],
  'apps.StatefulSetSpec': ['replicas', 'revisionHistoryLimit'],
  'apps.StatefulSetStatus': ['collisionCount'],
  'autoscaling.HorizontalPodAutoscalerSpec': ['minReplicas', 'targetCPUUtilizationPercentage'],
  'autoscaling.HorizontalPodAutoscalerStatus': ['currentCPUUtilizationPercentage', 'observedGeneration'],
  'autoscaling.HPAScalingRules': ['stabilizationWindowSeconds', 'selectPolicy'],
  'autoscaling.MetricTarget': ['averageUtilization'],
  'autoscaling.MetricValueStatus': ['averageUtilization'],
  'batch.CronJobSpec': ['failedJobsHistoryLimit', 'startingDeadlineSeconds', 'successfulJobsHistoryLimit', 'suspend', 'timeZone'],
  'batch.JobSpec': ['activeDeadlineSeconds', 'backoffLimit', 'backoffLimitPerIndex', 'completions', 'manualSelector', 'maxFailedIndexes', 'parallelism', 'suspend', 'ttlSecondsAfterFinished', 'completionMode', 'podReplacementPolicy', 'managedBy'],
  'batch.JobStatus': ['ready', 'terminating'],
  'batch.SuccessPolicyRule': ['succeededCount', 'succeededIndexes'],
  'certificates.CertificateSigningRequestSpec': ['expirationSeconds'],
  'coordination.LeaseSpec': ['leaseDurationSeconds', 'leaseTransitions', 'holderIdentity', 'strategy', 'preferredHolder'],
  'discovery.EndpointConditions': ['ready', 'serving', 'terminating'],
  'discovery.EndpointPort': ['port', 'name', 'protocol', 'appProtocol'],
  'discovery.Endpoint': ['hostname', 'nodeName', 'zone'],
  'flowcontrol.ExemptPriorityLevelConfiguration': ['lendablePercent', 'nominalConcurrencyShares'],
  'flowcontrol.LimitedPriorityLevelConfiguration': ['borrowingLimitPercent', 'lendablePercent', 'nominalConcurrencyShares'],
  'networking.IngressSpec': ['ingressClassName'],
  'networking.HTTPIngressPath': ['pathType'],
  'networking.IngressClassParametersReference': ['apiGroup', 'scope', 'namespace'],
  'networking.NetworkPolicyPort': ['endPort', 'protocol'],
  'storage.CSIDriverSpec': ['attachRequired', 'nodeAllocatableUpdatePeriodSeconds', 'podInfoOnMount', 'requiresRepublish', 'seLinuxMount', 'storageCapacity', 'fsGroupPolicy'],
  'storage.StorageClass': ['allowVolumeExpansion', 'reclaimPolicy', 'volumeBindingMode'],
  'storage.TokenRequest': ['expirationSeconds'],
  'storage.VolumeAttachmentSource': ['persistentVolumeName'],
  'storage.VolumeError': ['errorCode'],
  'storage.VolumeNodeResources': ['count'],
};
/** io.k8s.api.core.v1.PodSpec -> core.PodSpec; io.k8s.apimachinery.pkg.apis.meta.v1.X -> meta.X. */
function groupType(def) {
  const parts = def.split('.');
  const type = parts[parts.length - 1];
  const group = def.startsWith('io.k8s.apimachinery.pkg.apis.meta.') ? 'meta' : parts[parts.length - 3];
  return `${group}.${type}`;
}
const v3defs = {};
(function load(dir) {
  for (const f of readdirSync(dir)) {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) load(p);
    else if (f.endsWith('.json')) Object.assign(v3defs, JSON.parse(readFileSync(p, 'utf8')).components?.schemas ?? {});
  }
})(join(dataDir, 'openapi-v3'));
const SCALAR = new Set(['bool', 'string', 'int32', 'int64', 'uint32', 'uint64', 'double', 'float']);
const keepZero = {};
const pointerSeen = new Set();
/** Records the kept zeros of one message against the definition that owns its JSON fields (its own, or for an inline struct its parent's). */
function keepZerosOf(full, d, owner) {
  const ptr = POINTER_SCALARS[groupType(owner)] ?? [];
  const names = renamed.get(full);
  for (const [name, f] of Object.entries(msgNode(full).fields)) {
    if ((inline[full] ?? []).includes(name)) {
      keepZerosOf(f.type.slice(1), d, owner);
      continue;
    }
    if (f.rule === 'repeated' || f.keyType || !SCALAR.has(f.type)) continue;
    const json = names?.get(name) ?? name;
    const p = d.properties[json];
    if (!p) continue;
    if (ptr.includes(json)) pointerSeen.add(`${groupType(owner)}.${json}`);
    if ((d.required ?? []).includes(json) || p.default !== undefined || ptr.includes(json)) {
      const keep = (keepZero[full] ??= []);
      if (!keep.includes(json)) keep.push(json);
    }
  }
}
for (const full of messages) {
  const def = defOf(full);
  const d = v3defs[def] ?? swagger.definitions[def];
  if (d?.properties) keepZerosOf(full, d, def);
}
const unknownPointers = Object.entries(POINTER_SCALARS).flatMap(([t, fs]) => fs.map((f) => `${t}.${f}`)).filter((x) => !pointerSeen.has(x));
if (unknownPointers.length) throw new Error(`POINTER_SCALARS names fields no message has: ${unknownPointers.join(', ')}`);

const body = [
  '// Generated by scripts/gen-proto-schema.mjs from the Kubernetes 1.33 protobuf descriptors. Do not edit.',
  '/* eslint-disable */',
  `export const protoKinds: Record<string, string> = ${JSON.stringify(kinds)};`,
  '/** Message fields whose JSON name differs from the proto name (message -> proto name -> JSON name). */',
  `export const protoJsonNames: Record<string, Record<string, string>> = ${JSON.stringify(jsonNames)};`,
  '/** Fields holding a Go struct embedded inline: its fields belong to the parent in JSON. */',
  `export const protoInline: Record<string, string[]> = ${JSON.stringify(inline)};`,
  '/** Scalar fields (JSON names) whose zero value the JSON form keeps: required, defaulted or Go pointers. */',
  `export const protoKeepZero: Record<string, string[]> = ${JSON.stringify(keepZero)};`,
  `export const protoSchema: any = ${JSON.stringify(schema)};`,
  '',
].join('\n');
writeFileSync(join(root, 'src', 'codec', 'proto-schema.ts'), body);
console.log(`wrote src/codec/proto-schema.ts: ${messages.length} messages, ${Object.keys(kinds).length} kinds, ${renamed.size} messages with renamed fields, ${Object.keys(inline).length} with inline fields, ${body.length} bytes`);
