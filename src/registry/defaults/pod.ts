// Pod and pod-template defaults: SetDefaults_PodSpec, _Container, _Volume, _Probe ... of
// k8s.io/kubernetes pkg/apis/core/v1 (1.33), plus the pod-only ones (SetDefaults_Pod) and
// the service account's default name (Priority and DefaultTolerationSeconds are admission
// plugins: src/admission).
import type { ResourceInfo } from '../../api/catalog-types.js';
import { canonicalQuantity, parseQuantity, QUANTITY_ERROR, quantitySign } from '../quantity.js';
import { applyMemberDefaults, arr, child, decodeError, def, isObj } from './common.js';
import { setOwn } from '../own-keys.js';

const VOLUME_SOURCES = [
  'hostPath', 'emptyDir', 'gcePersistentDisk', 'awsElasticBlockStore', 'gitRepo', 'secret', 'nfs', 'iscsi', 'glusterfs',
  'persistentVolumeClaim', 'rbd', 'flexVolume', 'cinder', 'cephfs', 'flocker', 'downwardAPI', 'fc', 'azureFile', 'configMap',
  'vsphereVolume', 'quobyte', 'azureDisk', 'photonPersistentDisk', 'projected', 'portworxVolume', 'scaleIO', 'storageos', 'csi',
  'ephemeral', 'image',
] as const;
export const VOLUME_SOURCE_KEYS: readonly string[] = VOLUME_SOURCES;

/** The tag of an image reference as docker's parser reads it ("" when only a digest is given). */
export function imageTag(image: string): string {
  let ref = image;
  const at = ref.indexOf('@');
  const hasDigest = at >= 0;
  if (hasDigest) ref = ref.slice(0, at);
  const slash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  if (colon > slash) return ref.slice(colon + 1);
  return hasDigest ? '' : 'latest';
}

function defaultHandler(h: any): void {
  if (!isObj(h)) return;
  if (isObj(h.httpGet)) {
    def(h.httpGet, 'path', '/');
    def(h.httpGet, 'scheme', 'HTTP');
  }
}

function defaultProbe(p: any): void {
  if (!isObj(p)) return;
  def(p, 'timeoutSeconds', 1);
  def(p, 'periodSeconds', 10);
  def(p, 'successThreshold', 1);
  def(p, 'failureThreshold', 3);
  defaultHandler(p);
}

function defaultFieldRef(ref: any): void {
  if (isObj(ref)) def(ref, 'apiVersion', 'v1');
}

/** Canonicalizes the quantities of a ResourceRequirements; a malformed one fails decoding. */
export function defaultResources(r: any, info: Pick<ResourceInfo, 'kind' | 'version'>): void {
  if (!isObj(r)) return;
  for (const k of ['limits', 'requests']) {
    const m = r[k];
    if (!isObj(m)) continue;
    for (const name of Object.keys(m)) {
      const q = parseQuantity(m[name]);
      if (!q) throw decodeError(info, QUANTITY_ERROR);
      m[name] = canonicalQuantity(q);
    }
  }
}

export function defaultContainer(c: any, info: Pick<ResourceInfo, 'kind' | 'version'>): void {
  if (!isObj(c)) return;
  if (!c.imagePullPolicy) c.imagePullPolicy = imageTag(String(c.image ?? '')) === 'latest' ? 'Always' : 'IfNotPresent';
  def(c, 'terminationMessagePath', '/dev/termination-log');
  def(c, 'terminationMessagePolicy', 'File');
  for (const p of arr(c.ports)) def(p, 'protocol', 'TCP');
  // resources is a struct, not a pointer: it always appears, empty when unset.
  child(c, 'resources');
  defaultResources(c.resources, info);
  for (const e of arr(c.env)) if (isObj(e?.valueFrom)) defaultFieldRef(e.valueFrom.fieldRef);
  defaultProbe(c.livenessProbe);
  defaultProbe(c.readinessProbe);
  defaultProbe(c.startupProbe);
  if (isObj(c.lifecycle)) {
    defaultHandler(c.lifecycle.postStart);
    defaultHandler(c.lifecycle.preStop);
  }
}

function defaultDownwardItems(items: unknown): void {
  for (const it of arr(items)) if (isObj(it)) defaultFieldRef(it.fieldRef);
}

export function defaultVolume(v: any): void {
  if (!isObj(v)) return;
  if (!VOLUME_SOURCES.some((k) => v[k] !== undefined && v[k] !== null)) v.emptyDir = {};
  if (isObj(v.secret)) def(v.secret, 'defaultMode', 420);
  if (isObj(v.configMap)) def(v.configMap, 'defaultMode', 420);
  if (isObj(v.downwardAPI)) {
    def(v.downwardAPI, 'defaultMode', 420);
    defaultDownwardItems(v.downwardAPI.items);
  }
  if (isObj(v.projected)) {
    def(v.projected, 'defaultMode', 420);
    for (const s of arr(v.projected.sources)) {
      if (isObj(s?.downwardAPI)) defaultDownwardItems(s.downwardAPI.items);
      if (isObj(s?.serviceAccountToken)) def(s.serviceAccountToken, 'expirationSeconds', 3600);
    }
  }
  if (isObj(v.hostPath) && v.hostPath.type === undefined) v.hostPath.type = '';
  // iscsiInterface, azureDisk's cachingMode/fsType/kind, rbd's pool/user/keyring, scaleIO's
  // storageMode/fsType: the declarative defaults the catalog's v3 facts carry.
  applyMemberDefaults(v, 'io.k8s.api.core.v1.Volume');
  if (isObj(v.azureDisk) && v.azureDisk.readOnly === undefined) v.azureDisk.readOnly = false;
  if (isObj(v.ephemeral?.volumeClaimTemplate?.spec)) def(v.ephemeral.volumeClaimTemplate.spec, 'volumeMode', 'Filesystem');
}

/** SetDefaults_PodSpec with everything nested in it: used for Pods and every pod template. */
export function defaultPodSpec(spec: any, info: Pick<ResourceInfo, 'kind' | 'version'>): void {
  if (!isObj(spec)) return;
  def(spec, 'dnsPolicy', 'ClusterFirst');
  def(spec, 'restartPolicy', 'Always');
  if (spec.securityContext === undefined || spec.securityContext === null) spec.securityContext = {};
  if (spec.terminationGracePeriodSeconds === undefined || spec.terminationGracePeriodSeconds === null) spec.terminationGracePeriodSeconds = 30;
  def(spec, 'schedulerName', 'default-scheduler');
  // The deprecated serviceAccount mirrors serviceAccountName (conversion does it both ways).
  if (spec.serviceAccount && !spec.serviceAccountName) spec.serviceAccountName = spec.serviceAccount;
  for (const c of arr(spec.initContainers)) defaultContainer(c, info);
  for (const c of arr(spec.containers)) defaultContainer(c, info);
  for (const c of arr(spec.ephemeralContainers)) defaultContainer(c, info);
  for (const v of arr(spec.volumes)) defaultVolume(v);
  if (isObj(spec.overhead)) defaultResources({ limits: spec.overhead }, info);
}

/** A pod template inside a workload: the template's metadata is a struct and so always present. */
export function defaultPodTemplate(tmpl: any, info: Pick<ResourceInfo, 'kind' | 'version'>): void {
  if (!isObj(tmpl)) return;
  const meta = child(tmpl, 'metadata');
  // metav1.Time in a template's ObjectMeta is a struct without omitempty effect: kube 1.33
  // writes it out as null.
  if (meta && !('creationTimestamp' in meta)) meta.creationTimestamp = null;
  const spec = child(tmpl, 'spec');
  defaultPodSpec(spec, info);
}

/** SetDefaults_Pod: the pod-only defaults (requests from limits, service links, host ports). */
export function defaultPod(pod: any, info: Pick<ResourceInfo, 'kind' | 'version'>): void {
  const spec = child(pod, 'spec');
  if (!spec) return;
  defaultPodSpec(spec, info);
  for (const c of [...arr(spec.containers), ...arr(spec.initContainers)]) {
    const r = c?.resources;
    if (isObj(r) && isObj(r.limits)) {
      const req = child(r, 'requests')!;
      for (const [k, v] of Object.entries(r.limits)) if (!Object.hasOwn(req, k) || req[k] === undefined) setOwn(req, k, v);
    }
  }
  if (spec.enableServiceLinks === undefined || spec.enableServiceLinks === null) spec.enableServiceLinks = true;
  if (spec.hostNetwork === true) {
    for (const c of [...arr(spec.containers), ...arr(spec.initContainers)]) {
      for (const p of arr(c?.ports)) if (isObj(p) && !p.hostPort) p.hostPort = p.containerPort;
    }
  }
}

/** What a new Pod gets at creation besides the admission plugins: the service account's name in both fields. */
export function admitNewPod(pod: any): void {
  const spec = pod?.spec;
  if (!isObj(spec)) return;
  def(spec, 'serviceAccountName', 'default');
  spec.serviceAccount = spec.serviceAccountName;
}

/** The QoS class of a pod (qos.GetPodQOS), from the cpu and memory of every container. */
export function podQosClass(spec: any): 'Guaranteed' | 'Burstable' | 'BestEffort' {
  const containers = [...arr(spec?.containers), ...arr(spec?.initContainers)];
  let any = false;
  let guaranteed = true;
  for (const c of containers) {
    const req = isObj(c?.resources?.requests) ? c.resources.requests : {};
    const lim = isObj(c?.resources?.limits) ? c.resources.limits : {};
    for (const name of ['cpu', 'memory']) {
      const r = parseQuantity(req[name]);
      const l = parseQuantity(lim[name]);
      if ((r && r.m > 0n) || (l && l.m > 0n)) any = true;
      if (!l || l.m <= 0n) guaranteed = false;
      else if (r && quantitySign(r) > 0 && canonicalQuantity(r) !== canonicalQuantity(l)) guaranteed = false;
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed && containers.length > 0 ? 'Guaranteed' : 'Burstable';
}
