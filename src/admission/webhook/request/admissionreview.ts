// The AdmissionReview a webhook receives and the checks on the one it answers (kube's
// webhook/request/admissionreview.go): v1, or v1beta1 when that comes first among the hook's
// admissionReviewVersions; the request carries kind/resource/subResource as the hook matched
// them (an equivalent version under matchPolicy: Equivalent) beside requestKind/
// requestResource/requestSubResource as the client sent them.
//
// Thread ownership: none (pure functions).
import { randomUUID } from 'node:crypto';
import type { Attributes, GroupVersionKind, GroupVersionResource } from '../../plugin.js';

export interface Invocation {
  kind: GroupVersionKind;
  resource: GroupVersionResource;
  subresource: string;
}

export interface RequestParts {
  requestKind: GroupVersionKind;
  requestResource: GroupVersionResource;
  /** the object and old object in the invocation's version */
  object: any;
  oldObject: any;
}

/** What a webhook's answer holds once checked (kube's AdmissionResponse). */
export interface AdmissionResponse {
  allowed: boolean;
  auditAnnotations?: Record<string, string>;
  /** the JSON patch, decoded from base64 */
  patch?: Buffer;
  patchType?: string;
  result?: any;
  warnings?: string[];
}

/** The first review version both sides speak, or undefined (kube's CreateAdmissionObjects). */
export function reviewVersion(versions: unknown): 'v1' | 'v1beta1' | undefined {
  for (const v of Array.isArray(versions) ? versions : []) if (v === 'v1' || v === 'v1beta1') return v;
  return undefined;
}

/** The options a request of this operation carries when the seam did not fill them (kube's GetOperationOptions). */
function defaultOptions(a: Attributes): any {
  const dryRun = a.dryRun ? { dryRun: ['All'] } : {};
  switch (a.operation) {
    case 'CREATE':
      return { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1', ...dryRun };
    case 'UPDATE':
      return { kind: 'UpdateOptions', apiVersion: 'meta.k8s.io/v1', ...dryRun };
    case 'DELETE':
      return { kind: 'DeleteOptions', apiVersion: 'meta.k8s.io/v1', ...dryRun };
    default:
      return null;
  }
}

function userInfo(a: Attributes): any {
  const u = a.user;
  if (!u) return {};
  const out: any = {};
  if (u.name) out.username = u.name;
  if (u.uid) out.uid = u.uid;
  if (u.groups?.length) out.groups = u.groups;
  if (u.extra && Object.keys(u.extra).length) out.extra = u.extra;
  return out;
}

/** The review body (as a string, ready to send) and its uid. */
export function createAdmissionReview(version: 'v1' | 'v1beta1', a: Attributes, inv: Invocation, parts: RequestParts): { uid: string; body: string } {
  const uid = randomUUID();
  // A Namespace's own requests carry its name as their namespace, except a create (kube's request info).
  const isNamespace = parts.requestResource.group === '' && parts.requestResource.resource === 'namespaces';
  const namespace = isNamespace && a.operation !== 'CREATE' ? a.name : a.namespace;
  const request: any = {
    uid,
    kind: inv.kind,
    resource: inv.resource,
  };
  if (inv.subresource) request.subResource = inv.subresource;
  request.requestKind = parts.requestKind;
  request.requestResource = parts.requestResource;
  if (a.subresource) request.requestSubResource = a.subresource;
  if (a.name) request.name = a.name;
  if (namespace) request.namespace = namespace;
  request.operation = a.operation;
  request.userInfo = userInfo(a);
  request.object = parts.object ?? null;
  request.oldObject = parts.oldObject ?? null;
  request.dryRun = a.dryRun;
  request.options = a.options ?? defaultOptions(a);
  const body = JSON.stringify({ kind: 'AdmissionReview', apiVersion: `admission.k8s.io/${version}`, request });
  return { uid, body };
}

/** kube's VerifyAdmissionResponse: the answer's checks, throwing Go's message of the first that fails. */
export function verifyAdmissionResponse(version: 'v1' | 'v1beta1', uid: string, mutating: boolean, review: any): AdmissionResponse {
  if (review === null || typeof review !== 'object' || Array.isArray(review)) throw new Error(`Object 'Kind' is missing in '${JSON.stringify(review)}'`);
  if (typeof review.kind !== 'string' || !review.kind) throw new Error(`Object 'Kind' is missing in '${JSON.stringify(review)}'`);
  const r = review.response;
  if (r === null || r === undefined || typeof r !== 'object') throw new Error('webhook response was absent');
  let patch: Buffer | undefined;
  let patchType: string | undefined;
  const rawPatch = typeof r.patch === 'string' && r.patch ? Buffer.from(r.patch, 'base64') : undefined;
  if (version === 'v1') {
    if (r.uid !== uid) throw new Error(`expected response.uid=${JSON.stringify(uid)}, got ${JSON.stringify(typeof r.uid === 'string' ? r.uid : '')}`);
    const [g, v] = typeof review.apiVersion === 'string' && review.apiVersion.includes('/') ? review.apiVersion.split('/', 2) : ['', review.apiVersion ?? ''];
    if (g !== 'admission.k8s.io' || v !== 'v1' || review.kind !== 'AdmissionReview') {
      throw new Error(`expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got ${g}/${v}, Kind=${review.kind}`);
    }
    if (mutating) {
      const hasType = r.patchType !== undefined && r.patchType !== null;
      if (rawPatch && !hasType) throw new Error('webhook returned response.patch but not response.patchType');
      if (!rawPatch && hasType) throw new Error('webhook returned response.patchType but not response.patch');
      if (hasType) {
        if (typeof r.patchType !== 'string' || r.patchType === '') throw new Error(`webhook returned invalid response.patchType of ""`);
        patchType = r.patchType;
      }
      patch = rawPatch;
    } else {
      if (rawPatch) throw new Error('validating webhook may not return response.patch');
      if (r.patchType !== undefined && r.patchType !== null) throw new Error('validating webhook may not return response.patchType');
    }
  } else if (mutating && rawPatch) {
    // v1beta1 never checked the patch type: a patch is a JSON patch
    patch = rawPatch;
    patchType = 'JSONPatch';
  }
  const auditAnnotations = r.auditAnnotations && typeof r.auditAnnotations === 'object' && !Array.isArray(r.auditAnnotations) ? r.auditAnnotations : undefined;
  const warnings = Array.isArray(r.warnings) ? r.warnings.filter((w: unknown): w is string => typeof w === 'string') : undefined;
  return { allowed: r.allowed === true, auditAnnotations, patch, patchType, result: r.status ?? undefined, warnings };
}
