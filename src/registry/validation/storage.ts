// Storage kinds, as kube 1.33's pkg/apis/core/validation (PersistentVolumeClaim and
// PersistentVolume: ValidatePersistentVolumeClaimSpec and its update rules,
// ValidatePersistentVolumeSpec) and pkg/apis/storage/validation (StorageClass) check them,
// with kube's field paths and wording (note kube's own `spec.resources[storage]` path).
import type { FieldError } from '../strategy.js';
import { canonicalQuantity, compareQuantity, parseQuantity, quantitySign, type Quantity } from '../quantity.js';
import { qualifiedNameErrors } from '../validation.js';
import { validateLabelSelector } from './selector.js';
import { setOwn } from '../own-keys.js';
import {
  dns1123SubdomainErrors,
  each,
  forbidden,
  immutable,
  IMMUTABLE,
  invalid,
  isObj,
  list,
  notSupported,
  required,
  sameValue,
  sortedKeys,
  tooLong,
} from './field.js';


/** supportedAccessModes, as sets.List prints them (sorted). */
const ACCESS_MODES = ['ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOnce', 'ReadWriteOncePod'];
const VOLUME_MODES = ['Block', 'Filesystem'];
const PV_RECLAIM_POLICIES = ['Delete', 'Recycle', 'Retain'];
const POSITIVE_MSG = 'must be greater than zero';

/** The PersistentVolumeSource members, in the order kube's ValidatePersistentVolumeSpec counts them. */
const PV_SOURCES = [
  'hostPath', 'gcePersistentDisk', 'awsElasticBlockStore', 'glusterfs', 'flocker', 'nfs', 'rbd', 'quobyte', 'cephfs', 'iscsi', 'cinder', 'fc',
  'flexVolume', 'azureFile', 'vsphereVolume', 'photonPersistentDisk', 'portworxVolume', 'azureDisk', 'scaleIO', 'local', 'storageos', 'csi',
];

function validateAccessModes(modes: unknown, path: string): FieldError[] {
  const errs: FieldError[] = [];
  let rwop = false;
  let other = false;
  for (const m of list(modes)) {
    if (!ACCESS_MODES.includes(m)) errs.push(notSupported(path, m, ACCESS_MODES));
    if (m === 'ReadWriteOncePod') rwop = true;
    else if (ACCESS_MODES.includes(m)) other = true;
  }
  if (rwop && other) errs.push(forbidden(path, 'may not use ReadWriteOncePod with other access modes'));
  return errs;
}

/** ValidatePositiveQuantityValue: the value is printed as its canonical string. */
function positiveQuantity(q: Quantity, path: string): FieldError[] {
  return quantitySign(q) > 0 ? [] : [invalid(path, canonicalQuantity(q), POSITIVE_MSG)];
}

/** Quantity.Value(): the integer value, rounded away from zero. */
function quantityValue(q: Quantity): bigint {
  // Past 10^400 the value prints as ±Infinity anyway; 10^s of a large s is a long stall.
  if (q.s > 400) return q.m < 0n ? -(10n ** 400n) : 10n ** 400n;
  if (q.s >= 0) return q.m * 10n ** BigInt(q.s);
  const d = 10n ** BigInt(-q.s);
  const abs = q.m < 0n ? -q.m : q.m;
  const v = (abs + d - 1n) / d;
  return q.m < 0n ? -v : v;
}

function className(v: unknown, path: string): FieldError[] {
  return typeof v === 'string' && v.length > 0 ? each(path, v, dns1123SubdomainErrors(v)) : [];
}

export function validatePvcSpec(spec: any, path = 'spec'): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObj(spec)) spec = {};
  if (list(spec.accessModes).length === 0) errs.push(required(`${path}.accessModes`, 'at least 1 access mode is required'));
  if (isObj(spec.selector)) errs.push(...validateLabelSelector(spec.selector, `${path}.selector`));
  errs.push(...validateAccessModes(spec.accessModes, `${path}.accessModes`));
  const requests = isObj(spec.resources) && isObj(spec.resources.requests) ? spec.resources.requests : {};
  // kube keys the resources path itself: spec.resources[storage].
  const storagePath = `${path}.resources[storage]`;
  if (!Object.prototype.hasOwnProperty.call(requests, 'storage')) errs.push(required(storagePath));
  else {
    const q = parseQuantity(requests.storage);
    if (q) errs.push(...positiveQuantity(q, storagePath));
  }
  errs.push(...className(spec.storageClassName, `${path}.storageClassName`));
  if (spec.volumeMode != null && !VOLUME_MODES.includes(spec.volumeMode)) errs.push(notSupported(`${path}.volumeMode`, spec.volumeMode, VOLUME_MODES));
  return errs;
}

export function validatePvc(obj: any): FieldError[] {
  return validatePvcSpec(obj.spec);
}

/**
 * ValidatePersistentVolumeClaimUpdate: the spec may not change after create, except the
 * volume name once (the binder sets it) and, for a bound claim, the storage request
 * (expansion; with RecoverVolumeExpansionFailure, on in 1.33, it may shrink back down to
 * just above status.capacity).
 */
export function validatePvcUpdate(obj: any, old: any): FieldError[] {
  const errs: FieldError[] = [];
  const spec = structuredClone(isObj(obj.spec) ? obj.spec : {});
  const oldSpec = structuredClone(isObj(old.spec) ? old.spec : {});
  if (!oldSpec.volumeName) {
    if (spec.volumeName === undefined) delete oldSpec.volumeName;
    else oldSpec.volumeName = spec.volumeName;
  }
  const ANN = 'volume.beta.kubernetes.io/storage-class';
  const oldAnns = isObj(old.metadata?.annotations) ? old.metadata.annotations : {};
  const newAnns = isObj(obj.metadata?.annotations) ? obj.metadata.annotations : {};
  const has = (m: object, k: string) => Object.prototype.hasOwnProperty.call(m, k);
  const oldSc = oldSpec.storageClassName ?? null;
  const newSc = spec.storageClassName ?? null;
  if (has(oldAnns, ANN) && oldSc === null && newSc !== null && newSc === oldAnns[ANN] && (!has(newAnns, ANN) || newAnns[ANN] === oldAnns[ANN])) {
    // The class moves from the beta annotation into the field.
    delete spec.storageClassName;
  } else {
    if ((newAnns[ANN] ?? '') !== (oldAnns[ANN] ?? '')) errs.push(invalid(`metadata.annotations.${ANN}`, newAnns[ANN] ?? '', IMMUTABLE));
    // A claim without a class may get one (the retroactive default class).
    if (newSc !== null && oldSc === null && (!has(oldAnns, ANN) || newSc === oldAnns[ANN])) delete spec.storageClassName;
  }
  if (obj.status?.phase === 'Bound' && isObj(spec.resources?.requests)) {
    const o = oldSpec.resources?.requests?.storage;
    if (o === undefined) delete spec.resources.requests.storage;
    else spec.resources.requests.storage = o;
  }
  // volumeAttributesClassName has rules of its own (below).
  if (oldSpec.volumeAttributesClassName === undefined) delete spec.volumeAttributesClassName;
  else spec.volumeAttributesClassName = oldSpec.volumeAttributesClassName;
  if (!sameValue(normalizePvcSpec(spec), normalizePvcSpec(oldSpec))) {
    errs.push(
      forbidden(
        'spec',
        'spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n' + specDiff(normalizePvcSpec(oldSpec), normalizePvcSpec(spec)),
      ),
    );
  }
  const nq = parseQuantity(obj.spec?.resources?.requests?.storage) ?? ZERO;
  const oq = parseQuantity(old.spec?.resources?.requests?.storage) ?? ZERO;
  if (compareQuantity(nq, oq) < 0) {
    // RecoverVolumeExpansionFailure (beta, on in 1.33): a request may shrink, but not to status.capacity or below.
    const cap = parseQuantity(old.status?.capacity?.storage) ?? ZERO;
    if (compareQuantity(nq, cap) <= 0) errs.push(forbidden('spec.resources.requests.storage', 'field can not be less than status.capacity'));
  }
  // kube names this one without its spec prefix.
  errs.push(...immutable('volumeMode', obj.spec?.volumeMode ?? null, old.spec?.volumeMode ?? null));
  if ((obj.spec?.volumeAttributesClassName ?? null) !== (old.spec?.volumeAttributesClassName ?? null)) {
    // VolumeAttributesClass is beta and off in 1.33.
    errs.push(forbidden('spec.volumeAttributesClassName', 'update is forbidden when the VolumeAttributesClass feature gate is disabled'));
  }
  return errs;
}

const ZERO = parseQuantity('0')!;

/** The claim spec as semantic equality sees it: absent and empty collections alike. */
function normalizePvcSpec(spec: any): any {
  const out: any = {};
  for (const [k, v] of Object.entries(spec ?? {})) {
    if (v === undefined || v === null) continue;
    if (Array.isArray(v) && v.length === 0) continue;
    if (isObj(v) && Object.keys(v).length === 0) continue;
    setOwn(out, k, v);
  }
  if (isObj(out.resources)) {
    const r: any = {};
    for (const k of ['limits', 'requests']) if (isObj(out.resources[k]) && Object.keys(out.resources[k]).length) r[k] = canonicalMap(out.resources[k]);
    if (Object.keys(r).length) out.resources = r;
    else delete out.resources;
  }
  return out;
}

function canonicalMap(m: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(m)) {
    const q = parseQuantity(v);
    setOwn(out, k, q ? canonicalQuantity(q) : v);
  }
  return out;
}

/**
 * A line-per-field account of what changed, in the spirit of the cmp.Diff kube appends
 * (whose exact layout go-cmp deliberately randomizes, so no client can depend on it).
 */
function specDiff(old: any, now: any): string {
  const lines = ['  core.PersistentVolumeClaimSpec{'];
  const keys = [...new Set([...Object.keys(old), ...Object.keys(now)])].sort();
  for (const k of keys) {
    if (sameValue(old[k], now[k])) continue;
    const field = k[0].toUpperCase() + k.slice(1);
    if (old[k] !== undefined) lines.push(`- \t${field}: ${JSON.stringify(sortedKeys(old[k]))},`);
    if (now[k] !== undefined) lines.push(`+ \t${field}: ${JSON.stringify(sortedKeys(now[k]))},`);
  }
  lines.push('  }');
  return lines.join('\n') + '\n';
}

export function validatePv(obj: any): FieldError[] {
  const errs: FieldError[] = [];
  const spec = isObj(obj.spec) ? obj.spec : {};
  if (list(spec.accessModes).length === 0) errs.push(required('spec.accessModes'));
  errs.push(...validateAccessModes(spec.accessModes, 'spec.accessModes'));
  const capacity = isObj(spec.capacity) ? spec.capacity : {};
  const capNames = Object.keys(capacity);
  if (capNames.length === 0) errs.push(required('spec.capacity'));
  if (!capNames.includes('storage') || capNames.length > 1) {
    errs.push(notSupported('spec.capacity', isObj(spec.capacity) ? canonicalMap(sortedKeys(capacity)) : null, ['storage']));
  }
  for (const name of capNames.sort()) {
    const q = parseQuantity(capacity[name]);
    if (!q) continue;
    const p = `spec.capacity[${name}]`;
    if (quantitySign(q) < 0) errs.push(invalid(p, Number(quantityValue(q)), 'must be a valid resource quantity'));
    errs.push(...positiveQuantity(q, p));
  }
  const policy = spec.persistentVolumeReclaimPolicy;
  if (typeof policy === 'string' && policy.length > 0 && !PV_RECLAIM_POLICIES.includes(policy)) {
    errs.push(notSupported('spec.persistentVolumeReclaimPolicy', policy, PV_RECLAIM_POLICIES));
  }
  let count = 0;
  for (const src of PV_SOURCES) {
    const v = spec[src];
    if (v === undefined || v === null) continue;
    if (count > 0) {
      errs.push(forbidden(`spec.${src}`, 'may not specify more than 1 volume type'));
      continue;
    }
    count++;
    errs.push(...pvSourceErrors(src, v, `spec.${src}`, spec));
  }
  if (count === 0) errs.push(required('spec', 'must specify a volume type'));
  if (isObj(spec.hostPath) && typeof spec.hostPath.path === 'string' && cleanPath(spec.hostPath.path) === '/' && policy === 'Recycle') {
    errs.push(forbidden('spec.persistentVolumeReclaimPolicy', "may not be 'recycle' for a hostPath mount of '/'"));
  }
  errs.push(...className(spec.storageClassName, 'spec.storageClassName'));
  if (spec.volumeMode != null && !VOLUME_MODES.includes(spec.volumeMode)) errs.push(notSupported('spec.volumeMode', spec.volumeMode, VOLUME_MODES));
  return errs;
}

/** ValidatePersistentVolumeUpdate: the volume source may not change, nor the volume mode. */
export function validatePvUpdate(obj: any, old: any): FieldError[] {
  const errs: FieldError[] = [];
  const source = (spec: any) => {
    const out: any = {};
    for (const k of PV_SOURCES) if (spec?.[k] != null) out[k] = structuredClone(spec[k]);
    return out;
  };
  const now = source(obj.spec);
  const before = source(old.spec);
  // A CSI volume may gain a controllerExpandSecretRef.
  if (isObj(before.csi) && before.csi.controllerExpandSecretRef == null && isObj(now.csi)) delete now.csi.controllerExpandSecretRef;
  if (!sameValue(now, before)) {
    const lines = ['  core.PersistentVolumeSource{'];
    for (const k of [...new Set([...Object.keys(before), ...Object.keys(now)])].sort()) {
      if (sameValue(before[k], now[k])) continue;
      const f = k[0].toUpperCase() + k.slice(1);
      if (before[k] !== undefined) lines.push(`- \t${f}: ${JSON.stringify(sortedKeys(before[k]))},`);
      if (now[k] !== undefined) lines.push(`+ \t${f}: ${JSON.stringify(sortedKeys(now[k]))},`);
    }
    lines.push('  }');
    errs.push(forbidden('spec.persistentvolumesource', 'spec.persistentvolumesource is immutable after creation\n' + lines.join('\n') + '\n'));
  }
  errs.push(...immutable('volumeMode', obj.spec?.volumeMode ?? null, old.spec?.volumeMode ?? null));
  return errs;
}

/** The required members of the sources people write by hand. */
function pvSourceErrors(src: string, v: any, path: string, spec: any): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObj(v)) return errs;
  switch (src) {
    case 'hostPath':
      if (!v.path) errs.push(required(`${path}.path`));
      break;
    case 'nfs':
      if (!v.server) errs.push(required(`${path}.server`));
      if (!v.path) errs.push(required(`${path}.path`));
      else if (!String(v.path).startsWith('/')) errs.push(invalid(`${path}.path`, v.path, 'must be an absolute path'));
      break;
    case 'local':
      if (!v.path) errs.push(required(`${path}.path`));
      if (!isObj(spec.nodeAffinity)) errs.push(required('spec.nodeAffinity', 'Local volume requires node affinity'));
      break;
    case 'csi':
      if (!v.driver) errs.push(required(`${path}.driver`));
      if (!v.volumeHandle) errs.push(required(`${path}.volumeHandle`));
      break;
  }
  return errs;
}

function cleanPath(p: string): string {
  const parts: string[] = [];
  for (const seg of p.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') parts.pop();
    else parts.push(seg);
  }
  return p.startsWith('/') ? '/' + parts.join('/') : parts.join('/') || '.';
}

const SC_RECLAIM_POLICIES = ['Delete', 'Retain'];
const BINDING_MODES = ['Immediate', 'WaitForFirstConsumer'];

/** ValidateStorageClass (the class name itself is checked as metadata). */
export function validateStorageClass(obj: any): FieldError[] {
  const errs: FieldError[] = [];
  const prov = typeof obj.provisioner === 'string' ? obj.provisioner : '';
  if (!prov) errs.push(required('provisioner'));
  else errs.push(...qualifiedNameErrors(prov.toLowerCase()).map((m) => invalid('provisioner', prov.toLowerCase(), m)));
  const params = isObj(obj.parameters) ? obj.parameters : {};
  const keys = Object.keys(params);
  if (keys.length > 512) errs.push({ field: 'parameters', type: 'FieldValueTooLong', detail: 'may not be more than 512 bytes' });
  else {
    let size = 0;
    for (const k of keys) {
      if (k.length < 1) errs.push(invalid('parameters', k, 'field can not be empty.'));
      size += Buffer.byteLength(k) + Buffer.byteLength(String(params[k] ?? ''));
    }
    if (size > 256 * 1024) errs.push(tooLong('parameters', 256 * 1024));
  }
  if (typeof obj.reclaimPolicy === 'string' && obj.reclaimPolicy.length > 0 && !SC_RECLAIM_POLICIES.includes(obj.reclaimPolicy)) {
    errs.push(notSupported('reclaimPolicy', obj.reclaimPolicy, SC_RECLAIM_POLICIES));
  }
  if (obj.volumeBindingMode == null) errs.push(required('volumeBindingMode'));
  else if (!BINDING_MODES.includes(obj.volumeBindingMode)) errs.push(notSupported('volumeBindingMode', obj.volumeBindingMode, BINDING_MODES));
  return errs;
}

export function validateStorageClassUpdate(obj: any, old: any): FieldError[] {
  const errs: FieldError[] = [];
  const params = (o: any) => (isObj(o.parameters) && Object.keys(o.parameters).length ? o.parameters : null);
  if (!sameValue(params(obj), params(old))) errs.push(forbidden('parameters', 'updates to parameters are forbidden.'));
  if ((obj.provisioner ?? '') !== (old.provisioner ?? '')) errs.push(forbidden('provisioner', 'updates to provisioner are forbidden.'));
  if ((obj.reclaimPolicy ?? '') !== (old.reclaimPolicy ?? '')) errs.push(forbidden('reclaimPolicy', 'updates to reclaimPolicy are forbidden.'));
  errs.push(...immutable('volumeBindingMode', obj.volumeBindingMode ?? null, old.volumeBindingMode ?? null));
  return errs;
}

/** SetDefaults_StorageClass (storage.k8s.io/v1). */
export function defaultStorageClass(obj: any): void {
  if (!isObj(obj)) return;
  if (obj.reclaimPolicy === undefined || obj.reclaimPolicy === null) obj.reclaimPolicy = 'Delete';
  if (obj.volumeBindingMode === undefined || obj.volumeBindingMode === null) obj.volumeBindingMode = 'Immediate';
}
