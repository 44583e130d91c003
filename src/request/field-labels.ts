// Field selectors per kind: which field labels a resource accepts (kube-apiserver's
// field-label conversion functions, per group-version-kind) and the values of those
// fields for one object (its ToSelectableFields).
//
// A kind with no conversion function of its own accepts only metadata.name and
// metadata.namespace, with the generic message; a kind that has one rejects other labels
// with that function's message. The selectable values are read once per object and
// memoized on its cache entry (see selectable() in workers/watch/watch-cache.ts), so
// matching a selector never walks the object again.
import { errors } from '../errors.js';
import type { FieldSelector } from './selectors.js';

type Extract = (obj: any) => string;

interface KindFields {
  /** label -> canonical label; includes metadata.* where the kind accepts them */
  accepted: Record<string, string>;
  /** canonical label -> how to read it from the object */
  extract: Record<string, Extract>;
  reject: (label: string) => string;
}

const str = (path: string): Extract => {
  const parts = path.split('.');
  return (obj) => {
    let cur = obj;
    for (const p of parts) {
      if (cur === null || typeof cur !== 'object') return '';
      cur = cur[p];
    }
    return typeof cur === 'string' ? cur : cur === undefined || cur === null ? '' : String(cur);
  };
};
const bool = (path: string): Extract => {
  const s = str(path);
  return (obj) => (s(obj) === 'true' ? 'true' : 'false');
};
const int = (path: string): Extract => {
  const s = str(path);
  return (obj) => s(obj) || '0';
};

const name = str('metadata.name');
const namespace = str('metadata.namespace');
const notSupported = (label: string) => `field label not supported: ${label}`;
const metaOnly = (label: string) => `"${label}" is not a known field selector: only "metadata.name", "metadata.namespace"`;

function kind(namespaced: boolean, fields: Record<string, Extract>, opts: { aliases?: Record<string, string>; reject?: (l: string) => string } = {}): KindFields {
  const accepted: Record<string, string> = { 'metadata.name': 'metadata.name' };
  const extract: Record<string, Extract> = { 'metadata.name': name, 'metadata.namespace': namespace };
  if (namespaced) accepted['metadata.namespace'] = 'metadata.namespace';
  for (const [label, ex] of Object.entries(fields)) {
    accepted[label] = label;
    extract[label] = ex;
  }
  for (const [from, to] of Object.entries(opts.aliases ?? {})) accepted[from] = to;
  return { accepted, extract, reject: opts.reject ?? notSupported };
}

const involved = (prefix: string): Record<string, Extract> => ({
  'involvedObject.kind': str(`${prefix}.kind`),
  'involvedObject.namespace': str(`${prefix}.namespace`),
  'involvedObject.name': str(`${prefix}.name`),
  'involvedObject.uid': str(`${prefix}.uid`),
  'involvedObject.apiVersion': str(`${prefix}.apiVersion`),
  'involvedObject.resourceVersion': str(`${prefix}.resourceVersion`),
  'involvedObject.fieldPath': str(`${prefix}.fieldPath`),
});

const coreEventFields: Record<string, Extract> = {
  ...involved('involvedObject'),
  reason: str('reason'),
  reportingComponent: str('reportingComponent'),
  // the source is the component that reported it; newer reporters fill only reportingComponent
  source: (o) => str('source.component')(o) || str('reportingComponent')(o),
  type: str('type'),
};

/** Keyed by group-resource (the storage key: "pods", "jobs.batch"). */
const KINDS: Record<string, KindFields> = {
  pods: kind(
    true,
    {
      'spec.nodeName': str('spec.nodeName'),
      'spec.restartPolicy': str('spec.restartPolicy'),
      'spec.schedulerName': str('spec.schedulerName'),
      'spec.serviceAccountName': str('spec.serviceAccountName'),
      'spec.hostNetwork': bool('spec.hostNetwork'),
      'status.phase': str('status.phase'),
      'status.podIP': (o) => str('status.podIPs.0.ip')(o) || str('status.podIP')(o),
      // accepted by the conversion, but never among the pod's selectable fields: matches only ""
      'status.podIPs': () => '',
      'status.nominatedNodeName': str('status.nominatedNodeName'),
    },
    { aliases: { 'spec.host': 'spec.nodeName' } },
  ),
  nodes: kind(false, { 'spec.unschedulable': bool('spec.unschedulable') }),
  namespaces: kind(false, { 'status.phase': str('status.phase') }),
  secrets: kind(true, { type: str('type') }),
  services: kind(true, { 'spec.clusterIP': str('spec.clusterIP'), 'spec.type': str('spec.type') }),
  replicationcontrollers: kind(true, { 'status.replicas': int('status.replicas') }),
  events: kind(true, coreEventFields),
  'events.events.k8s.io': kind(
    true,
    {
      ...involved('regarding'),
      reason: str('reason'),
      reportingComponent: str('reportingController'),
      type: str('type'),
    },
    {
      aliases: {
        'regarding.kind': 'involvedObject.kind',
        'regarding.namespace': 'involvedObject.namespace',
        'regarding.name': 'involvedObject.name',
        'regarding.uid': 'involvedObject.uid',
        'regarding.apiVersion': 'involvedObject.apiVersion',
        'regarding.resourceVersion': 'involvedObject.resourceVersion',
        'regarding.fieldPath': 'involvedObject.fieldPath',
        reportingController: 'reportingComponent',
        // kube's mapping still takes it, though events.k8s.io/v1 has no source field
        source: 'source',
      },
    },
  ),
  'jobs.batch': kind(true, { 'status.successful': int('status.succeeded') }, { reject: (l) => `field label "${l}" not supported for batchv1.Job` }),
  'certificatesigningrequests.certificates.k8s.io': kind(false, { 'spec.signerName': str('spec.signerName') }),
  'clustertrustbundles.certificates.k8s.io': kind(false, { 'spec.signerName': str('spec.signerName') }),
  'resourceslices.resource.k8s.io': kind(
    false,
    { 'spec.nodeName': str('spec.nodeName'), 'spec.driver': str('spec.driver') },
    { reject: (l) => `"${l}" is not a known field selector: only "metadata.name", "spec.nodeName", "spec.driver"` },
  ),
};

// The events.k8s.io kind reads the core labels it maps to, not its own spellings.
for (const l of Object.keys(involved('x'))) delete KINDS['events.events.k8s.io'].accepted[l];
delete KINDS['events.events.k8s.io'].accepted.reportingComponent;

const DEFAULT: KindFields = {
  accepted: { 'metadata.name': 'metadata.name', 'metadata.namespace': 'metadata.namespace' },
  extract: { 'metadata.name': name, 'metadata.namespace': namespace },
  reject: metaOnly,
};

/** The field labels of custom resources (CRD selectableFields), by "<resource>.<group>" and "...@<version>". */
let customKinds = new Map<string, KindFields>();

/** Replaces the custom resources' field labels (src/registry/crd/selectable-fields.ts). */
export function setCustomFieldLabels(regs: Array<{ key: string; namespaced: boolean; fields: Array<[string, Extract]> }>): void {
  const m = new Map<string, KindFields>();
  for (const r of regs) {
    // (a custom resource without selectableFields takes the generic labels and message)
    if (r.fields.length) m.set(r.key, kind(r.namespaced, Object.fromEntries(r.fields), { reject: notSupported }));
  }
  customKinds = m;
}

export function kindFields(gr: string): KindFields {
  return KINDS[gr] ?? (customKinds.size ? customKinds.get(gr) : undefined) ?? DEFAULT;
}

/**
 * Checks every label of a parsed field selector against the kind, rewriting aliases to
 * their canonical label. An unknown label is a 400, as kube-apiserver's list and watch
 * handlers answer a failed field-label conversion.
 */
export function convertFieldSelector(gr: string, sel: FieldSelector | null): FieldSelector | null {
  if (!sel) return null;
  const k = kindFields(gr);
  return sel.map((r) => {
    const canonical = k.accepted[r.field];
    if (canonical === undefined) throw errors.badRequest(k.reject(r.field));
    return canonical === r.field ? r : { ...r, field: canonical };
  });
}

/** The selectable field values of one object of the kind (canonical label -> value). */
export function selectableFields(gr: string, obj: any): Record<string, string> {
  const out: Record<string, string> = {};
  const list = extractorsOf(kindFields(gr));
  for (let i = 0; i < list.length; i++) out[list[i][0]] = list[i][1](obj);
  return out;
}

/**
 * Whether the kind's selectable fields are metadata.name and metadata.namespace alone: an
 * object's fields then follow from its key, and its cache entry keeps none (watch-cache.ts).
 */
export function onlyMetadataFields(gr: string): boolean {
  return extractorsOf(kindFields(gr)).length === 2;
}

/** Each kind's extractors as a list, made once: every commit reads the selectable fields of its object. */
const extractorLists = new WeakMap<KindFields, Array<[string, Extract]>>();
function extractorsOf(k: KindFields): Array<[string, Extract]> {
  let l = extractorLists.get(k);
  if (!l) extractorLists.set(k, (l = Object.entries(k.extract)));
  return l;
}
