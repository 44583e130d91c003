// serviceaccounts/token (authentication.k8s.io/v1 TokenRequest): signs a token for a stored
// ServiceAccount, optionally bound to a Pod, Secret or Node, as kube's TokenREST. Nothing is
// stored; the answer is the request with its status (token, expirationTimestamp).
import { errors, StatusError } from '../errors.js';
import { parseBody } from '../codec/decode.js';
import { fieldValidationMode, validateBody } from '../registry/field-validation.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import { encodeObject } from '../codec/representation.js';
import { encodeContextOf, responseRepresentation, sendEncoded } from './representation.js';
import type { HandlerContext } from './context.js';
import { admitSubresourceCreate } from './admission.js';
import type { BoundRef } from '../auth/service-account.js';
import type { FieldError } from '../registry/strategy.js';

const MIN_SECONDS = 10 * 60;
const MAX_SECONDS = 2 ** 32;
const DEFAULT_SECONDS = 60 * 60;
/** kube's serviceaccount.WarnOnlyBoundTokenExpirationSeconds: what kubelets ask for their projected tokens */
export const WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS = 60 * 60 + 7;
/** kube's serviceaccount.ExpirationExtensionSeconds: a year */
export const EXPIRATION_EXTENSION_SECONDS = 24 * 365 * 60 * 60;

function rfc3339(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export async function handleServiceAccountToken(c: HandlerContext): Promise<void> {
  const auth = c.auth;
  if (!auth) throw errors.internal('serviceaccounts/token needs the service account token issuer');
  const repr = responseRepresentation(c);
  const body: any = parseBody(c.req.body, c.req.headers['content-type']);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw errors.badRequest('the body must be a TokenRequest object');
  const name = c.info.name;
  const ns = c.info.namespace;
  // Unknown fields are reported as for any body; spec.audiences, required in the schema, is defaulted here.
  const gvk = { group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest' };
  validateBody(body, gvk, fieldValidationMode(c.req.query, 'create'), null, (c.req.warnings ??= []), { name, required: false });
  const meta = body.metadata ?? {};
  const spec = body.spec ?? {};
  const errs: FieldError[] = [];
  if (meta.name && meta.name !== name) errs.push({ field: 'metadata.name', type: 'FieldValueInvalid', value: meta.name, detail: 'must match the service account name if specified' });
  if (meta.namespace && meta.namespace !== ns) errs.push({ field: 'metadata.namespace', type: 'FieldValueInvalid', value: meta.namespace, detail: 'must match the service account namespace if specified' });
  if (errs.length) throw errors.invalid('TokenRequest', 'authentication.k8s.io', name, errs);
  let seconds: number = typeof spec.expirationSeconds === 'number' ? spec.expirationSeconds : DEFAULT_SECONDS;
  if (seconds < MIN_SECONDS) errs.push({ field: 'spec.expirationSeconds', type: 'FieldValueInvalid', value: seconds, detail: 'may not specify a duration less than 10 minutes' });
  if (seconds > MAX_SECONDS) errs.push({ field: 'spec.expirationSeconds', type: 'FieldValueInvalid', value: seconds, detail: 'may not specify a duration larger than 2^32 seconds' });
  if (errs.length) throw errors.invalid('TokenRequest', 'authentication.k8s.io', name, errs);

  const sa = entryObject(await c.store.get(c.target, ns, name, ''));
  await admitSubresourceCreate(c, body, gvk);
  let bound: BoundRef | undefined;
  let node: { name: string; uid: string } | undefined;
  const ref = spec.boundObjectRef ?? null;
  if (ref) {
    const apiVersion: string = ref.apiVersion ?? '';
    const group = apiVersion.includes('/') ? apiVersion.split('/')[0] : '';
    const version = apiVersion.includes('/') ? apiVersion.split('/')[1] : apiVersion;
    const kind: string = ref.kind ?? '';
    const resource = group === '' ? ({ Pod: 'pods', Secret: 'secrets', Node: 'nodes' } as Record<string, string>)[kind] : undefined;
    if (!resource) throw errors.badRequest(`cannot bind token to object of type ${group}/${version}, Kind=${kind}`);
    const t = c.targets.resolve('', 'v1', resource)!;
    const obj = entryObject(await c.store.get(t, resource === 'nodes' ? '' : ns, ref.name ?? '', ''));
    if (resource === 'pods' && name !== (obj.spec?.serviceAccountName ?? '')) {
      throw errors.badRequest(`cannot bind token for serviceaccount ${JSON.stringify(name)} to pod running with serviceaccount ${JSON.stringify(obj.spec?.serviceAccountName ?? '')}`);
    }
    const uid: string = obj.metadata.uid;
    if (ref.uid && ref.uid !== uid) {
      throw errors.conflict({ group, resource: kind }, ref.name, `the UID in the bound object reference (${ref.uid}) does not match the UID in record (${uid}). The object might have been deleted and then recreated`);
    }
    bound = { kind: kind as BoundRef['kind'], name: obj.metadata.name, uid };
    if (resource === 'pods' && obj.spec?.nodeName) {
      // A pod-bound token also names the pod's node (ServiceAccountTokenPodNodeInfo), when the node exists.
      try {
        const n = entryObject(await c.store.get(c.targets.resolve('', 'v1', 'nodes')!, '', obj.spec.nodeName, ''));
        node = { name: n.metadata.name, uid: n.metadata.uid };
      } catch (e) {
        if (!(e instanceof StatusError && e.code === 404)) throw e;
      }
    }
  }
  const max = auth.maxTokenExpirationSeconds;
  if (max > 0 && seconds > max) {
    (c.req.warnings ??= []).push(`requested expiration of ${seconds} seconds shortened to ${max} seconds`);
    seconds = max;
  }
  const audiences: string[] = Array.isArray(spec.audiences) && spec.audiences.length ? spec.audiences : auth.serviceAccounts.opts.apiAudiences;
  // kube's TokenREST.Create with --service-account-extend-token-expiration: a pod-bound token
  // for the API's own audiences asked for with the kubelet's default 3607 s is valid for a
  // year, and carries the short expiry as kubernetes.io.warnafter (the safe rollout of
  // bound tokens); the status still reports the requested expiry.
  let extendTo: { validSeconds: number; warnAfterSeconds: number } | undefined;
  const apiAuds = auth.serviceAccounts.opts.apiAudiences;
  if (auth.extendTokenExpiration && bound?.kind === 'Pod' && seconds === WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS && audiences.length === apiAuds.length && audiences.every((a) => apiAuds.includes(a))) {
    extendTo = { validSeconds: EXPIRATION_EXTENSION_SECONDS, warnAfterSeconds: seconds };
  }
  const issued = await auth.serviceAccounts.issue(sa, audiences, seconds, bound, node, extendTo);
  const out = {
    kind: 'TokenRequest',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: { name, namespace: ns, creationTimestamp: null },
    spec: { audiences, expirationSeconds: seconds, boundObjectRef: ref },
    status: { token: issued.token, expirationTimestamp: rfc3339(issued.expiration) },
  };
  const ctx = { ...encodeContextOf(c, repr), apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest' };
  sendEncoded(c, 201, repr, encodeObject({ json: Buffer.from(JSON.stringify(out)) }, repr, ctx));
}
